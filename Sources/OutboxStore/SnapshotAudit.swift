import OutboxSupport

/// Reads a store's files back and checks the snapshot invariant against the rows held in memory:
/// every held row (pending, leased or dead letter) covered by the checkpoint has its item record in
/// a segment that exists and that the checkpoint lists, and each listed segment holds at least the
/// rows the checkpoint counts for it. Debug builds run it after every snapshot; tests and the fuzz
/// targets call it directly. Returns the problems found (empty: the invariant holds).
enum SnapshotAudit {
  package static func check(directory: String, store: HeldItems) -> [String] {
    let checkpoint: Checkpoint
    do {
      guard let bytes = try FileIO.read(directory + "/" + Checkpoint.fileName) else { return ["no checkpoint"] }
      checkpoint = try Checkpoint.decode(bytes)
    } catch {
      return ["checkpoint unreadable: \(error)"]
    }
    var problems: [String] = []
    var found: [UInt64: Set<UInt64>] = [:]
    for (n, first) in checkpoint.segments.enumerated() {
      guard let seqs = itemSeqs(directory: directory, first: first) else {
        problems.append("listed segment \(SegmentFormat.name(first: first)) is missing or unreadable")
        continue
      }
      found[first] = seqs
      if let held = checkpoint.held?[n], seqs.count < held {
        problems.append("segment \(first) holds \(seqs.count) items, the checkpoint counts \(held)")
      }
    }
    let table = store.table
    for row in table.rows where !table.has(.removed, row) && table.seqs[row] <= checkpoint.coversSeq {
      let seq = table.seqs[row]
      guard let first = checkpoint.segments.last(where: { $0 <= seq }), found[first]?.contains(seq) == true else {
        problems.append("held seq \(seq) has no record in a listed segment")
        continue
      }
    }
    return problems
  }

  /// The seqs of the item records in one segment file, or nil when it cannot be read.
  private static func itemSeqs(directory: String, first: UInt64) -> Set<UInt64>? {
    guard let bytes = try? FileIO.read(directory + "/" + SegmentFormat.name(first: first)) else { return nil }
    var seqs = Set<UInt64>()
    bytes.withUnsafeBytes { raw in
      let reader = SegmentReader(raw)
      var offset = SegmentFormat.headerSize
      while case .record(let record) = reader.read(at: offset) {
        if record.type == .item { seqs.insert(record.seq) }
        offset = record.end
      }
    }
    return seqs
  }
}
