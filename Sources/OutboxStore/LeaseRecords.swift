import OutboxSupport

/// Replays lease records onto a lease table. Delivery counts only ever rise, so they are applied
/// whatever the checkpoint covers; the table itself starts from the checkpoint's, so lease records
/// it already covers are skipped.
enum LeaseRecords {
  static func apply(
    _ record: SegmentReader.Record, to leases: inout [Lease], finished: inout [String], raised: inout [UInt64],
    store: HeldItems, covers: UInt64?
  ) -> Bool {
    var cursor = PayloadCursor(record.payload)
    let fresh = covers.map { record.seq > $0 } ?? true
    switch record.type {
    case .lease:
      guard let expires = cursor.u64(), UTCTime.isRepresentable(Int64(bitPattern: expires)),
        let flushId = flushId(&cursor), let seqs = cursor.seqs(),
        let noteLength = cursor.u32(), let note = cursor.take(Int(noteLength)),
        let origin = LeaseOrigin(rawValue: cursor.u8() ?? 0)
      else { return false }
      if fresh {
        leases.removeAll { $0.flushId == flushId }
        leases.append(
          Lease(flushId: flushId, seqs: seqs, expiresAt: Int64(bitPattern: expires), note: Array(note), origin: origin))
      }
    case .leaseEnd:
      guard let outcome = cursor.u8(), LeaseOutcome(rawValue: outcome) != nil, let flushId = flushId(&cursor),
        let count = cursor.u32(), Int(count) <= cursor.remaining / 12
      else { return false }
      for _ in 0..<count {
        guard let seq = cursor.u64(), let deliveries = cursor.u32() else { return false }
        if store.raiseDeliveries(seq: seq, to: deliveries) { raised.append(seq) }
      }
      if fresh {
        leases.removeAll { $0.flushId == flushId }
        if outcome == LeaseOutcome.acked.rawValue { finished.append(flushId) }
      }
    case .item, .remove, .deadLetter, .requeue:
      return false
    }
    return true
  }

  private static func flushId(_ cursor: inout PayloadCursor) -> String? {
    guard let length = cursor.u8(), let bytes = cursor.take(Int(length)) else { return nil }
    return String(decoding: bytes, as: UTF8.self)
  }
}

/// Replays dead-letter records: dead and requeued states are set as recorded, in log order.
enum DeadLetterRecords {
  /// How many entries a `deadLetter` record carries (0 if unreadable).
  static func count(_ record: SegmentReader.Record) -> Int {
    var cursor = PayloadCursor(record.payload)
    return cursor.u32().map(Int.init) ?? 0
  }

  /// Sets the recorded states; returns the seqs the record names, or nil if it does not decode.
  static func apply(_ record: SegmentReader.Record, to store: HeldItems) -> [UInt64]? {
    var cursor = PayloadCursor(record.payload)
    if record.type == .requeue {
      guard let seqs = cursor.seqs() else { return nil }
      store.setDead(seqs, reason: nil)
      return seqs
    }
    guard let count = cursor.u32(), Int(count) <= cursor.remaining / 10 else { return nil }
    var named: [UInt64] = []
    for _ in 0..<count {
      guard let seq = cursor.u64(), let low = cursor.u8(), let high = cursor.u8(),
        let reason = cursor.take(Int(low) | Int(high) << 8)
      else { return nil }
      store.setDead([seq], reason: String(decoding: reason, as: UTF8.self))
      named.append(seq)
    }
    return named
  }
}
