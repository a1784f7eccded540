/// "Did you mean" for an unknown method (`-32601`'s `data.didYouMean`), as unknown flags and
/// subcommands have on the command line.
extension MethodTable {
  /// The name of `known` nearest to `word` (ignoring case), when near enough to be a slip: at most
  /// two edits, or a third of the word's length.
  static func nearest(_ word: String, _ known: [String]) -> String? {
    guard word.utf8.count <= 256 else { return nil }  // an overlong name is no slip; keep the work bounded
    let lower = word.lowercased()
    var best: (name: String, distance: Int)? = nil
    for name in known where !name.hasPrefix("rpc.") || lower.hasPrefix("rpc.") {
      let d = editDistance(lower, name.lowercased())
      if best.map({ d < $0.distance }) ?? true { best = (name, d) }
    }
    guard let best, best.distance <= max(2, word.count / 3) else { return nil }
    return best.name
  }

  /// Levenshtein distance over UTF-8 bytes.
  static func editDistance(_ a: String, _ b: String) -> Int {
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
