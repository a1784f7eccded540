/// Bookkeeping for compaction: which segment holds a seq, and how much of each no longer counts.
extension Journal {
  /// The index of the segment that holds the item with `seq`.
  func segmentIndex(of seq: UInt64) -> Int? {
    var low = 0
    var high = segments.count
    while low < high {
      let mid = (low + high) / 2
      if segments[mid].first <= seq { low = mid + 1 } else { high = mid }
    }
    return low == 0 ? nil : low - 1
  }

  /// An item written to a segment is no longer held (`noteRemoved`), or its state changed: delivery
  /// count, dead or requeued (`noteChanged`); either makes the segment's next rewrite worth doing.
  func noteRemoved(_ seq: UInt64) { if let n = segmentIndex(of: seq) { segments[n].dead += 1 } }
  func noteChanged(_ seq: UInt64) { if let n = segmentIndex(of: seq) { segments[n].changed += 1 } }

  /// True when the open segment holds something a compaction should drop.
  var currentNeedsRewrite: Bool { isOpen && (segments.last?.needsRewrite ?? false) }

  /// Records the outcome of a rewrite: `info` replaces the segment (nil: it was deleted).
  func replace(first: UInt64, with info: SegmentInfo?, dead: Int, changed: Int) {
    guard let n = segments.firstIndex(where: { $0.first == first }), !isOpen || n != segments.count - 1 else { return }
    guard var updated = info else {
      segments.remove(at: n)
      return
    }
    updated.dead = max(0, segments[n].dead - dead)
    updated.changed = max(0, segments[n].changed - changed)
    segments[n] = updated
  }
}
