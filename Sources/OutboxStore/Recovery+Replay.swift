/// Reading one segment's records, a window at a time: the records of a window are read (each one
/// checked) before any is applied, so the user-table lookups their items will make are read ahead
/// together (`PendingStore.warm`): loading many users is then not one cache miss after another.
/// The records are applied in order, each exactly as it would be alone.
extension Recovery {
  /// Records read ahead at once.
  static let readAhead = 64

  /// A record whose seq lies outside `seqs` (the range the file names give this segment) is damage: the
  /// snapshot counts and rewrites items by that range, so one kept from elsewhere would be lost.
  /// `ahead`: the records read ahead (`SegmentPrefetch`), taken while they continue where this reads.
  mutating func replay(
    _ reader: SegmentReader, name: String, seqs: Range<UInt64>, info: inout SegmentInfo, ahead: ReadAhead? = nil
  ) {
    var ahead = ahead
    let isLast = seqs.upperBound == SegmentFormat.seqLimit
    var offset = SegmentFormat.headerSize
    var lastGood: UInt64? = nil
    if reader.headerVersion != SegmentFormat.version {  // a newer version was refused before; this is damage
      if isLast && reader.bytes.count <= SegmentFormat.headerSize {
        cutTail(name: name, at: 0, reason: "incomplete segment header", info: &info)
        info.bytes = 0
        return
      }
      guard let next = damage(name: name, at: 0, after: nil, reader: reader, info: &info) else { return }
      offset = next
    }
    var window = Window()
    while true {
      let stop = window.read(reader, from: offset, ahead: &ahead)
      store.items.warm(userHashes: window.userHashes)
      for (record, parts) in window.records {
        if !seqs.contains(record.seq) || !apply(record, parts: parts, info: &info) {
          damage(name: name, at: offset, after: lastGood, reader: reader, info: &info)
        }
        lastGood = record.seq
        offset = record.end
      }
      switch stop {
      case nil, .record:  // a full window: read on
        continue
      case .end:
        return
      case .torn where isLast && !reader.validRecordFollows(after: offset):
        cutTail(name: name, at: offset, reason: "torn write at the end of the log", info: &info)
        return
      case .torn, .damaged:
        guard let next = damage(name: name, at: offset, after: lastGood, reader: reader, info: &info) else { return }
        offset = next
      }
    }
  }
}

/// A segment's records as `SegmentPrefetch` read them, taken in order.
struct ReadAhead {
  let segment: SegmentPrefetch.Segment
  /// The next record to take, and where it starts.
  var index = 0
  var offset = SegmentFormat.headerSize
}

/// Up to `Recovery.readAhead` intact records in a row, with the parts of their item bodies.
private struct Window {
  var records: [(record: SegmentReader.Record, parts: BodyParts?)] = []
  var userHashes: [UInt32] = []

  /// Reads records from `offset` on while they are intact; returns the read that ended the window
  /// (not a record), or nil when the window is full. Records read ahead from `offset` on are taken
  /// from `ahead` (the same reads, made on the prefetch thread).
  mutating func read(
    _ reader: SegmentReader, from offset: Int, ahead: inout ReadAhead?
  ) -> SegmentReader.ReadResult? {
    records.removeAll(keepingCapacity: true)
    userHashes.removeAll(keepingCapacity: true)
    if var scan = ahead, scan.offset == offset, let stop = scan.segment.stop {
      let all = scan.segment.records
      while records.count < Recovery.readAhead && scan.index < all.count {
        add(all[scan.index])
        scan.offset = all[scan.index].record.end
        scan.index += 1
      }
      ahead = scan
      return scan.index == all.count ? stop : nil
    }
    var at = offset
    while records.count < Recovery.readAhead {
      let result = reader.read(at: at)
      guard case .record(let record) = result else { return result }
      add(SegmentRecord(record))
      at = record.end
    }
    return nil
  }

  private mutating func add(_ read: SegmentRecord) {
    if let parts = read.parts, parts.userEnd > 0 { userHashes.append(parts.userHash) }
    records.append((read.record, read.parts))
  }
}
