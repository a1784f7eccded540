/// Builds the bytes of a segment file from the held items (a compaction's rewrite, an upgrade).
/// A dead letter's item record is followed by a `deadLetter` record carrying its seq and reason.
enum SegmentWriter {
  /// A header and one item record per held item with `from <= seq < to`, with current delivery counts.
  static func content(of store: HeldItems, from: UInt64, to: UInt64?) -> (bytes: [UInt8], items: Int) {
    let table = store.table
    let start = table.lowerBound(from)
    let end = to.map(table.lowerBound) ?? table.seqs.count
    var out = SegmentFormat.header
    var count = 0
    var size = 0
    for row in start..<end where !table.has(.removed, row) {
      size += store.bodies.bodyLength(store.record(row)) + Int(table.idLengths[row]) + 64
    }
    out.reserveCapacity(out.count + size)
    for row in start..<end where !table.has(.removed, row) {
      store.withBody(row: row) { body in
        SegmentFormat.appendItem(
          seq: table.seqs[row], savedAt: table.savedAt[row], deliveries: table.deliveries[row], kind: table.kind(row),
          hasUser: table.has(.hasUser, row), id: store.id(row: row), body: body, to: &out)
      }
      count += 1
      if table.has(.dead, row) {  // the dead-letter state survives the rewrite, reason included
        let seq = table.seqs[row]
        SegmentFormat.appendDeadLetter([(seq, store.deadReasons[seq] ?? "unknown")], recordSeq: seq, to: &out)
      }
    }
    return (out, count)
  }
}
