import OutboxSupport

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
      let d = EditDistance.between(lower, name.lowercased())
      if best.map({ d < $0.distance }) ?? true { best = (name, d) }
    }
    guard let best, best.distance <= max(2, word.count / 3) else { return nil }
    return best.name
  }
}
