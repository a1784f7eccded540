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

  /// Iterative matching with one backtrack point per star kind, so no pattern costs more than
  /// pattern length × text length steps.
  private static func match(_ p: ArraySlice<UInt8>, _ t: ArraySlice<UInt8>) -> Bool {
    let p = Array(p), t = Array(t)
    var pi = 0, ti = 0
    var star: (p: Int, t: Int, deep: Bool)? = nil
    while ti < t.count {
      if pi < p.count {
        if p[pi] == UInt8(ascii: "*") {
          let deep = pi + 1 < p.count && p[pi + 1] == UInt8(ascii: "*")
          pi += deep ? 2 : 1
          if deep, pi < p.count, p[pi] == UInt8(ascii: "/") { pi += 1 }
          star = (pi, ti, deep)
          continue
        }
        if p[pi] == UInt8(ascii: "?") && t[ti] != UInt8(ascii: "/") || p[pi] == t[ti] {
          pi += 1
          ti += 1
          continue
        }
      }
      guard let s = star, s.deep || t[s.t] != UInt8(ascii: "/") else { return false }
      star = (s.p, s.t + 1, s.deep)
      pi = s.p
      ti = s.t + 1
    }
    while pi < p.count && p[pi] == UInt8(ascii: "*") { pi += 1 }
    return pi == p.count
  }
}
