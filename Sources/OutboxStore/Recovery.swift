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
  /// The store's identity (`store.id`); nil when it has none yet (`FileKeeper` writes one once it opened).
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
  private let directory: String
  private let store: Store
  private let acceptLoss: Bool
  private let log: Log
  private var outcome = RecoveryOutcome()
  private var leaseTable: [Lease] = []
  /// Items whose state a later record changed: a delivery count a lease end raised above their item
  /// record's, or a dead letter or requeue journaled after it. Their segments must be rewritten (with
  /// that state) before the record may be dropped.
  private var restated: [UInt64] = []
  /// One buffer for every segment read.
  private let buffer = ReadBuffer()
  /// Seqs the checkpoint covers that left the pending set by a record written after it (removals,
  /// dead letters): what may lawfully be missing from the checkpoint's count.
  private var exitsAfterCover = 0
  /// Segments recovery found damaged or cut: their loss is reported already.
  private var damagedOrCut: Set<UInt64> = []
  private var prefetch = true
  /// The checkpoint file's bytes, which a load image names.
  private var checkpointBytes: [UInt8]?

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

// MARK: - Image

extension Recovery {
  /// Loads the rows from `load.image` when it describes exactly these files (`LoadImage`), and takes
  /// it off its path, used or not, before anything is written. False: replay the segments.
  mutating func loadImage(_ firsts: [UInt64]) -> Bool {
    let path = directory + "/" + LoadImage.fileName
    defer { discardImage(path) }
    guard let checkpoint = outcome.checkpoint, let bytes = checkpointBytes, let identity = outcome.identity else {
      return false
    }
    do throws(LoadImage.Refusal) {
      guard
        let image = try LoadImage.read(
          directory: directory, checkpoint: bytes, decoded: checkpoint, segments: firsts, identity: identity)
      else { return false }
      store.items.install(image)
      outcome.segments = image.segments
      outcome.fromImage = true
      log.info("loaded \(image.table.seqs.count) rows from \(LoadImage.fileName)")
      return true
    } catch {
      switch error {
      case .stale(let why): log.info("\(LoadImage.fileName) not used, \(why): replaying the segments")
      case .damaged(let why): log.warn("\(LoadImage.fileName) not used, \(why): replaying the segments")
      }
      return false
    }
  }

  /// Takes the image off its path: renamed at once, for `FileKeeper` to unlink on its background queue
  /// (`RecoveryOutcome.discardedImage`). Freeing a GB of cached pages, and waiting for any of them
  /// being written back, took 0.2 s and more of a start. A renamed image a kill leaves is a temporary
  /// file, removed at the next start. Under `--max-store-bytes` it goes at once: the cap counts every file.
  private mutating func discardImage(_ path: String) {
    let temp = FileIO.temporaryName(beside: path + ".old")  // random: nothing planted there is replaced
    if store.cap == nil && rename(path, temp) == 0 {
      outcome.discardedImage = temp
    } else {
      unlink(path)
    }
  }
}

// MARK: - Loss

/// Recovery refuses to hide a loss: what was loaded is compared with what the checkpoint says was
/// held. The oldest held seq must lie in a segment on disk, each listed segment must hold at least
/// the rows the checkpoint counted for it, and the pending rows it covers, plus those that left by a
/// record written after it, must reach its item count. A shortfall refuses the start unless
/// `acceptLoss`, which reports `recoveredWithLoss` with the counts and seq ranges. (Release builds from
/// store engine v2 (8f0e18a) to fabe680 wrote checkpoints that count items no file holds: such a store
/// now says what it lost.)
/// Damaged and torn segments are reported where they are found and not counted twice. A checkpoint
/// counts only records that were flushed before it was written (see `Compaction.run`), so any
/// shortfall is a loss, whatever the `--fsync` policy.
extension Recovery {
  struct Loss {
    var from: UInt64
    var to: UInt64?
    /// How many items, when the count says (nil: a seq range with no file).
    var missing: Int?
    var detail: String
  }

  mutating func noteExits(_ record: SegmentReader.Record, _ count: Int) {
    guard let covers = outcome.checkpoint?.coversSeq, record.seq > covers else { return }
    exitsAfterCover += count
  }

  mutating func checkAgainstCheckpoint(_ firsts: [UInt64]) throws(StartupError) {
    guard let checkpoint = outcome.checkpoint, damagedOrCut.isEmpty else { return }
    var losses = perSegmentLosses(checkpoint)
    // A checkpoint that counts no items and lists no segment held nothing (not even dead letters,
    // whose segments it would list), whatever its firstSeq says: nothing can be missing.
    let heldSomething = checkpoint.items > 0 || !checkpoint.segments.isEmpty
    if heldSomething, checkpoint.firstSeq < checkpoint.nextSeq, firsts.first.map({ $0 > checkpoint.firstSeq }) ?? true {
      let to = (firsts.first ?? checkpoint.nextSeq) - 1
      losses.append(
        Loss(
          from: checkpoint.firstSeq, to: to, missing: nil,
          detail: "no segment holds seqs \(checkpoint.firstSeq)–\(to), where the oldest held item was"))
    }
    let table = store.items.table
    var loaded = 0
    for row in table.rows where !table.has(.removed, row) && !table.has(.dead, row) {
      if table.seqs[row] <= checkpoint.coversSeq { loaded += 1 }
    }
    if loaded + exitsAfterCover < checkpoint.items {
      let missing = checkpoint.items - loaded - exitsAfterCover
      losses.append(
        Loss(
          from: checkpoint.firstSeq, to: checkpoint.coversSeq, missing: missing,
          detail: "the checkpoint counts \(checkpoint.items) pending items; \(loaded) were loaded"))
    }
    try report(losses)
  }

  private func perSegmentLosses(_ checkpoint: Checkpoint) -> [Loss] {
    guard let held = checkpoint.held else { return [] }
    var losses: [Loss] = []
    for (n, first) in checkpoint.segments.enumerated() {
      guard let info = outcome.segments.first(where: { $0.first == first }), info.items < held[n] else { continue }
      let next = n + 1 < checkpoint.segments.count ? checkpoint.segments[n + 1] - 1 : nil
      losses.append(
        Loss(
          from: first, to: next, missing: held[n] - info.items,
          detail: "\(SegmentFormat.name(first: first)) holds \(info.items) items; the checkpoint counts \(held[n])"))
    }
    return losses
  }

  private mutating func report(_ losses: [Loss]) throws(StartupError) {
    guard !losses.isEmpty else { return }
    let message = "held items are missing: " + losses.map(\.detail).joined(separator: "; ")
    let ranges = losses.map { loss in
      JSONValue.object([
        JSONMember("fromSeq", .int(Int64(loss.from))), JSONMember("toSeq", loss.to.map { .int(Int64($0)) } ?? .null),
        JSONMember("missing", loss.missing.map { .int(Int64($0)) } ?? .null),
      ])
    }
    let first = [
      JSONMember("fromSeq", .int(Int64(losses[0].from))),
      JSONMember("toSeq", losses[0].to.map { .int(Int64($0)) } ?? .null),
    ]
    let missing = JSONMember("missing", .int(Int64(losses.reduce(0) { $0 + ($1.missing ?? 0) })))
    guard acceptLoss else {
      throw .refused(
        "missing_data", message + "; start with --accept-loss to serve what is left",
        first + [missing, JSONMember("ranges", .array(ranges))])
    }
    log.error(message + "; --accept-loss: serving what is left")
    outcome.warnings.append(
      .object(
        [JSONMember("code", .string("recoveredWithLoss")), JSONMember("message", .string(message))] + first
          + [missing, JSONMember("ranges", .array(ranges))]))
    outcome.dirty = true
  }
}

// MARK: - Replay

/// Reading one segment's records, a window at a time: the records of a window are read (each one
/// checked) before any is applied, so the user-table lookups their items will make are read ahead
/// together (`HeldItems.warm`): loading many users is then not one cache miss after another.
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
