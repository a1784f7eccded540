/// File globs from the configuration: `*` any run of characters but `/`, `**` any run including
/// `/`, `?` one character. A glob without `/` is matched against the file name, as editors'
/// `files.associations` are; one with `/` against the end of the path.
package enum Glob {
  package static func matches(_ glob: String, _ path: String) -> Bool {
    let pattern = Array(glob.utf8)
    let text = Array(path.utf8)
    if !pattern.contains(UInt8(ascii: "/")) {
      let name = text.lastIndex(of: UInt8(ascii: "/")).map { Array(text[($0 + 1)...]) } ?? text
      return match(pattern[...], name[...])
    }
    if match(pattern[...], text[...]) { return true }
    return match(Array("**/".utf8)[...] + pattern[...], text[...])
  }

  /// Dynamic programming over (pattern position, text position), one row per pattern token: no
  /// recursion, and at most pattern length × text length steps.
  private static func match(_ p: ArraySlice<UInt8>, _ t: ArraySlice<UInt8>) -> Bool {
    let p = Array(p), t = Array(t)
    let slash = UInt8(ascii: "/"), star = UInt8(ascii: "*")
    var can = [Bool](repeating: false, count: t.count + 1)  // the pattern so far matches t[..<j]
    can[0] = true
    var i = 0
    while i < p.count {
      var next = [Bool](repeating: false, count: t.count + 1)
      var any = false  // some can[k], k <= j
      if p[i] == star && i + 1 < p.count && p[i + 1] == star {
        let directories = i + 2 < p.count && p[i + 2] == slash  // `**/`: zero or more directories
        for j in 0...t.count {
          if directories {
            next[j] = can[j] || (j > 0 && t[j - 1] == slash && any)
            any = any || can[j]
          } else {
            any = any || can[j]
            next[j] = any
          }
        }
        i += directories ? 3 : 2
      } else if p[i] == star {
        for j in 0...t.count { next[j] = can[j] || (j > 0 && next[j - 1] && t[j - 1] != slash) }
        i += 1
      } else {
        for j in stride(from: 1, through: t.count, by: 1) where can[j - 1] {
          next[j] = p[i] == t[j - 1] || (p[i] == UInt8(ascii: "?") && t[j - 1] != slash)
        }
        i += 1
      }
      can = next
    }
    return can[t.count]
  }
}
