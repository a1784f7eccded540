/// How far apart two words are, for "did you mean" (unknown flags, subcommands and methods).
package enum EditDistance {
  /// Levenshtein distance over UTF-8 bytes: the fewest insertions, deletions and substitutions.
  package static func between(_ a: String, _ b: String) -> Int {
    let a = Array(a.utf8), b = Array(b.utf8)
    guard !a.isEmpty else { return b.count }
    var row = Array(0...b.count)
    for i in 1...a.count {
      var previous = row[0]
      row[0] = i
      for j in stride(from: 1, through: b.count, by: 1) {
        let substitution = previous + (a[i - 1] == b[j - 1] ? 0 : 1)
        previous = row[j]
        row[j] = min(substitution, row[j] + 1, row[j - 1] + 1)
      }
    }
    return row[b.count]
  }
}
