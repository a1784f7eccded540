import OutboxJSON
import OutboxSupport

/// What recovery rebuilt besides the items: the segments on disk, the live leases and the warnings.
struct RecoveryOutcome {
  package var segments: [SegmentInfo] = []
  package var leases: [Lease] = []
  /// Flush ids acked recently (from the checkpoint and the log after it).
  package var finished: [String] = []
  package var checkpoint: Checkpoint?
  package var warnings: [JSONValue] = []
  /// Something was repaired or upgraded: write a checkpoint soon.
  package var dirty = false
  /// The rows came from `load.image`, not a replay of the segments.
  package var fromImage = false
  /// Where the image was moved to be deleted off the start's path (`Recovery.discardImage`).
  package var discardedImage: String?
  /// The store's identity (`store.id`); nil when it has none yet (`Disk` writes one once it opened).
  package var identity: [UInt8]?
}

/// Rebuilds the store at start from `checkpoint.json` and the `segment.*` files (format 2), after
/// upgrading a format-1 store (`snapshot.json`, `journal.*`) if one is there.
///
/// Loading is a scan: each item record's fixed fields are read and its body bytes copied into the
/// arena. Never deletes or empties a store to "recover": a torn tail of the newest segment is cut
/// (a copy goes to `quarantine/`); damage elsewhere is quarantined, skipped to the next intact record,
/// and reported as `recoveredWithLoss`. A missing segment refuses the start unless `acceptLoss`.
struct Recovery {
  let directory: String
  let store: Store
  let acceptLoss: Bool
  let log: Log
  var outcome = RecoveryOutcome()
  private var leaseTable: [Lease] = []
  /// Items whose state a later record changed: a delivery count a lease end raised above their item
  /// record's, or a dead letter or requeue journaled after it. Their segments must be rewritten (with
  /// that state) before the record may be dropped.
  private var restated: [UInt64] = []
  /// One buffer for every segment read.
  private let buffer = ReadBuffer()
  /// Seqs the checkpoint covers that left the pending set by a record written after it (removals,
  /// dead letters): what may lawfully be missing from the checkpoint's count.
  var exitsAfterCover = 0
  /// Segments recovery found damaged or cut: their loss is reported already.
  var damagedOrCut: Set<UInt64> = []
  private var prefetch = true
  /// The checkpoint file's bytes, which a load image names.
  var checkpointBytes: [UInt8]?

  /// `prefetch`: read the segments ahead on a second thread (`SegmentPrefetch`); false reads each in turn.
  package static func run(
    directory: String, store: Store, acceptLoss: Bool, log: Log, prefetch: Bool = true
  ) throws(StartupError)
    -> RecoveryOutcome
  {
    var recovery = Recovery(directory: directory, store: store, acceptLoss: acceptLoss, log: log)
    recovery.prefetch = prefetch
    try recovery.run()
    return recovery.outcome
  }

  private mutating func run() throws(StartupError) {
    let names = try list()
    try StoreFiles.checkVersions(directory: directory, names: names)
    StoreFiles.removeTemporaries(directory: directory, names: names)
    outcome.identity = StoreIdentity.read(directory: directory)
    outcome.checkpoint = loadCheckpoint(names)
    if let key = outcome.checkpoint?.idKey { store.items.idKey = key }  // before any row: ids recomputed, not held
    if UpgradeV1.hasFormatV1Files(names) {
      // Only a store that never had a checkpoint is upgraded (again): beside an unreadable one, the
      // segments are the upgraded data and the format-1 files are leftovers.
      if outcome.checkpoint == nil && !names.contains(Checkpoint.fileName) {
        try UpgradeV1.run(directory: directory, names: names, store: store, log: log, outcome: &outcome)
        return
      }
      UpgradeV1.removeFormatV1Files(directory: directory, names: names)  // a finished upgrade's leftovers
    }
    let firsts = try list().compactMap(SegmentFormat.first(ofName:)).sorted()
    try checkForMissingSegments(firsts)
    leaseTable = outcome.checkpoint?.leases ?? []
    outcome.finished = outcome.checkpoint?.finished ?? []
    if !loadImage(firsts) {
      try replayAll(firsts)
      countDead()
    }
    if let checkpoint = outcome.checkpoint { store.items.advanceSeq(to: checkpoint.nextSeq) }
    // The log has records the checkpoint does not cover (a crash, or none yet): settle at the next snapshot.
    if !firsts.isEmpty && store.items.nextSeq - 1 > (outcome.checkpoint?.coversSeq ?? 0) { outcome.dirty = true }
    try checkAgainstCheckpoint(firsts)
    outcome.leases = leaseTable
    // Empty segments go, except those the checkpoint lists, and the first one when it holds the
    // checkpoint's oldest held seq by its name (`checkAgainstCheckpoint` looks there): the next start
    // would miss them (fuzzing found both).
    let directory = self.directory
    var kept = Set(outcome.checkpoint?.segments ?? [])
    if let checkpoint = outcome.checkpoint, let first = outcome.segments.first?.first,
      first <= checkpoint.firstSeq, checkpoint.firstSeq < checkpoint.nextSeq
    {
      kept.insert(first)
    }
    outcome.segments.removeAll {
      $0.bytes <= SegmentFormat.headerSize && !kept.contains($0.first)
        && unlink(directory + "/" + SegmentFormat.name(first: $0.first)) == 0
    }
  }

  private mutating func replayAll(_ firsts: [UInt64]) throws(StartupError) {
    // Room for the rows at once; never more than the files could hold (a checkpoint may be hostile).
    let root = self.directory
    let fileBytes = firsts.reduce(0) { $0 + FileIO.size(root + "/" + SegmentFormat.name(first: $1)) }
    store.items.reserve(min(outcome.checkpoint?.items ?? 0, fileBytes / (SegmentFormat.recordHeaderSize + 31)))
    let prefetch =
      self.prefetch ? SegmentPrefetch(paths: firsts.map { root + "/" + SegmentFormat.name(first: $0) }) : nil
    defer { prefetch?.cancel() }
    for (n, first) in firsts.enumerated() {
      try replay(first: first, next: n + 1 < firsts.count ? firsts[n + 1] : nil, prefetch: prefetch)
    }
  }

  private func list() throws(StartupError) -> [String] {
    do { return try FileIO.list(directory) } catch {
      throw .refused("unreadable_store", "cannot list the store: \(error)")
    }
  }

  // MARK: - Checkpoint

  private mutating func loadCheckpoint(_ names: [String]) -> Checkpoint? {
    guard names.contains(Checkpoint.fileName) else { return nil }
    let path = directory + "/" + Checkpoint.fileName
    do {
      guard let bytes = try FileIO.read(path) else { return nil }
      let checkpoint = try Checkpoint.decode(bytes)
      checkpointBytes = bytes
      return checkpoint
    } catch {
      StoreFiles.quarantine(directory: directory, name: Checkpoint.fileName)
      warn("checkpointCorrupt", "\(Checkpoint.fileName) is unreadable (\(error)); rebuilt from the segments")
      outcome.dirty = true
      return nil
    }
  }

  /// Every segment the checkpoint lists must be there; without a checkpoint the log must start at seq 1.
  private mutating func checkForMissingSegments(_ firsts: [UInt64]) throws(StartupError) {
    let missing: [UInt64]
    if let checkpoint = outcome.checkpoint {
      missing = checkpoint.segments.filter { !firsts.contains($0) }
    } else if let oldest = firsts.first, oldest > 1 {
      missing = [1]
    } else {
      missing = []
    }
    guard let from = missing.first else { return }
    let to = firsts.first { $0 > from }.map { $0 - 1 }
    let message =
      outcome.checkpoint == nil
      ? "the store has no checkpoint and its oldest segment starts at seq \(firsts.first ?? 0), so earlier data is missing"
      : "segments the checkpoint lists are missing: " + missing.map(SegmentFormat.name(first:)).joined(separator: ", ")
    let range = [JSONMember("fromSeq", .int(Int64(from))), JSONMember("toSeq", to.map { .int(Int64($0)) } ?? .null)]
    guard acceptLoss else {
      throw .refused("missing_data", message + "; start with --accept-loss to serve what is left", range)
    }
    log.error(message + "; --accept-loss: serving what is left")
    outcome.warnings.append(
      .object(
        [JSONMember("code", .string("recoveredWithLoss")), JSONMember("message", .string(message))] + range))
    outcome.dirty = true
  }

  // MARK: - Segments

  /// Replays one segment; `next` is the first seq of the segment after it (nil for the last).
  /// `prefetch`: the segments as read ahead on another thread (`SegmentPrefetch`), in this order.
  private mutating func replay(first: UInt64, next: UInt64?, prefetch: SegmentPrefetch?) throws(StartupError) {
    let name = SegmentFormat.name(first: first)
    var info = SegmentInfo(first: first)
    let segment = prefetch?.next()
    defer { prefetch?.done() }
    let bytes: UnsafeRawBufferPointer?
    do { bytes = try segment.map { try $0.load() } ?? buffer.load(directory + "/" + name) } catch {
      throw .refused("unreadable_store", "cannot read \(error)")
    }
    if let bytes {
      info.bytes = bytes.count
      replay(
        SegmentReader(bytes), name: name, seqs: first..<(next ?? SegmentFormat.seqLimit), info: &info,
        ahead: segment.map { ReadAhead(segment: $0) })
    }
    outcome.segments.append(info)
  }

  /// Applies one record; false if its payload does not decode.
  /// `parts`: where an item body's user and label end, found as it was read ahead.
  mutating func apply(_ record: SegmentReader.Record, parts: BodyParts?, info: inout SegmentInfo) -> Bool {
    switch record.type {
    case .item:
      guard let item = ItemRecord(record.payload) else { return false }
      info.items += 1
      guard record.seq >= store.items.nextSeq else { return true }  // a repeat of a seq already held
      store.items.append(
        seq: record.seq, id: item.id, kind: item.kind, savedAt: item.savedAt, deliveryCount: item.deliveries,
        hasUser: item.hasUser, body: item.body, verified: false, parts: parts)
    case .remove:
      var cursor = PayloadCursor(record.payload)
      guard let seqs = cursor.seqs() else { return false }
      info.otherBytes += record.payload.count + SegmentFormat.recordHeaderSize
      let covers = outcome.checkpoint?.coversSeq ?? 0
      noteExits(record, seqs.reduce(0) { $0 + ($1 <= covers ? 1 : 0) })
      store.items.remove(seqs: seqs)
    case .deadLetter, .requeue:
      guard let seqs = DeadLetterRecords.apply(record, to: store.items) else { return false }
      if record.type == .deadLetter { noteExits(record, DeadLetterRecords.count(record)) }
      if record.type == .requeue || record.seq >= store.items.nextSeq {  // journaled, not a rewrite's copy
        info.otherBytes += record.payload.count + SegmentFormat.recordHeaderSize
        // The state lives only in this record until the items' own segments are rewritten with it:
        // mark them, or a snapshot that drops this segment would bring back the state before.
        restated.append(contentsOf: seqs)
      }
    case .lease, .leaseEnd:
      guard
        LeaseRecords.apply(
          record, to: &leaseTable, finished: &outcome.finished, raised: &restated, store: store.items,
          covers: outcome.checkpoint?.coversSeq)
      else { return false }
      info.otherBytes += record.payload.count + SegmentFormat.recordHeaderSize
    }
    store.items.advanceSeq(to: record.seq + 1)
    return true
  }

  // MARK: - Damage

  /// Quarantines a damaged segment, reports the loss, and returns the offset of the next intact record.
  @discardableResult
  mutating func damage(
    name: String, at offset: Int, after lastGood: UInt64?, reader: SegmentReader, info: inout SegmentInfo
  ) -> Int? {
    if !info.damaged { StoreFiles.quarantine(directory: directory, name: name) }
    info.damaged = true
    damagedOrCut.insert(info.first)
    outcome.dirty = true
    let next = reader.nextValidRecord(after: offset)
    var nextSeq: UInt64? = nil
    if let next, case .record(let record) = reader.read(at: next) { nextSeq = record.seq }
    let from = (lastGood ?? info.first - 1) + 1
    let message =
      "segment \(name) is damaged at byte \(offset): records from seq \(from)"
      + (nextSeq.map { " to \($0 - 1)" } ?? " on") + " are lost (a copy is in quarantine/)"
    log.error(message)
    outcome.warnings.append(
      .object([
        JSONMember("code", .string("recoveredWithLoss")), JSONMember("message", .string(message)),
        JSONMember("file", .string(name)), JSONMember("fromSeq", .int(Int64(from))),
        JSONMember("toSeq", nextSeq.map { .int(Int64($0 - 1)) } ?? .null),
      ]))
    return next
  }

  mutating func cutTail(name: String, at offset: Int, reason: String, info: inout SegmentInfo) {
    StoreFiles.quarantine(directory: directory, name: name)
    _ = truncate(directory + "/" + name, off_t(offset))
    info.bytes = offset
    damagedOrCut.insert(info.first)
    outcome.dirty = true  // a new checkpoint must describe the cut file before the next start checks it
    warn("tornTail", "\(reason): \(name) was cut at byte \(offset) (a copy is in quarantine/)")
  }

  mutating func warn(_ code: String, _ message: String) {
    log.warn(message)
    outcome.warnings.append(.object([JSONMember("code", .string(code)), JSONMember("message", .string(message))]))
  }

  // MARK: - Bookkeeping

  /// Item records whose items are no longer held, and held items whose counts rose, per segment.
  private mutating func countDead() {
    let firsts = outcome.segments.map(\.first)
    for seq in restated where store.items.contains(seq: seq) {
      if let n = firsts.lastIndex(where: { $0 <= seq }) { outcome.segments[n].changed += 1 }
    }
    let table = store.items.table
    for n in outcome.segments.indices {
      let start = table.lowerBound(outcome.segments[n].first)
      let end = n + 1 < outcome.segments.count ? table.lowerBound(outcome.segments[n + 1].first) : table.seqs.count
      let held = (start..<end).reduce(0) { $0 + (table.has(.removed, $1) ? 0 : 1) }
      outcome.segments[n].dead = max(0, outcome.segments[n].items - held)
    }
  }
}
