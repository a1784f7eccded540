import OutboxJSON
import OutboxSupport

/// What reading a format-1 store found and did.
struct RecoveryOutcomeV1 {
  var snapshotCovers: UInt64 = 0
  /// `coversSeq` of the snapshot before it (`snapshot.prev.json`), which decides what compaction may delete.
  var previousCovers: UInt64 = 0
  var segments: [UInt64: Int] = [:]
  var nextSeq: UInt64 = 1
  var warnings: [JSONValue] = []
  /// Damaged and unapplied segments: moved to `quarantine/` once a snapshot holds what was recovered.
  var setAside: [String] = []
}

/// Reads a format-1 store (kept for the upgrade to format 2): the newest snapshot that checks out, then
/// the journal after it.
///
/// Never deletes or empties a store to "recover". A torn tail on the last segment (a write cut short)
/// is copied to `quarantine/` and cut off. Damage anywhere else is copied to `quarantine/`, replay
/// stops there, and a `recoveredWithLoss` warning names the seq range. A newer format is refused.
struct RecoveryV1 {
  let directory: String
  let store: HeldItems
  let log: Log
  var outcome = RecoveryOutcomeV1()

  static let previousSnapshot = "snapshot.prev.json"

  static func run(directory: String, store: HeldItems, log: Log) throws(StartupError) -> RecoveryOutcomeV1 {
    var recovery = RecoveryV1(directory: directory, store: store, log: log)
    try recovery.loadSnapshot()
    try recovery.replayJournal()
    return recovery.outcome
  }

  // MARK: - Snapshot

  private mutating func loadSnapshot() throws(StartupError) {
    let names = [SnapshotFileV1.fileName, Self.previousSnapshot]
    var failures: [String] = []
    for (n, name) in names.enumerated() {
      let path = directory + "/" + name
      let bytes: [UInt8]?
      do { bytes = try FileIO.read(path) } catch { throw .unavailable("cannot read \(error)") }
      guard let bytes else { continue }
      do {
        let state = try SnapshotFileV1.decode(bytes, path: path)
        apply(state)
        if n == 0, let previous = try? FileIO.read(directory + "/" + Self.previousSnapshot),
          let prev = try? SnapshotFileV1.decode(previous, path: Self.previousSnapshot)
        {
          outcome.previousCovers = prev.coversSeq
        } else if n == 1 {
          outcome.previousCovers = state.coversSeq
        }
        if !failures.isEmpty { warn("snapshotCorrupt", "fell back to \(name): " + failures.joined(separator: "; ")) }
        return
      } catch .newerVersion(_, let version) {
        throw StartupError(
          .unsupportedVersion(file: path, version: .int(version)),
          "\(path) has format version \(version), newer than this build reads; nothing was touched")
      } catch {
        failures.append("\(name) is corrupt (\(Self.reason(error)))")
        quarantine(name)
      }
    }
    if !failures.isEmpty && !journalStartsAtOne() {
      throw .unavailable(
        failures.joined(separator: "; ")
          + "; no older snapshot and journal can rebuild it, so the store was left untouched")
    }
    if !failures.isEmpty { warn("snapshotCorrupt", failures.joined(separator: "; ") + "; rebuilt from the journal") }
  }

  private static func reason(_ error: SnapshotError) -> String {
    switch error {
    case .corrupt(_, let reason): reason
    case .unreadable(let file): "\(file)"
    case .newerVersion(_, let version): "version \(version)"
    }
  }

  private mutating func apply(_ state: SnapshotState) {
    for item in state.items { store.append(item) }
    store.advanceSeq(to: state.nextSeq)
    outcome.snapshotCovers = state.coversSeq
  }

  private func journalStartsAtOne() -> Bool {
    segmentFirsts().first == 1
  }

  private func segmentFirsts() -> [UInt64] {
    ((try? FileIO.list(directory)) ?? []).compactMap(JournalFormatV1.segmentFirst).sorted()
  }

  // MARK: - Journal

  private mutating func replayJournal() throws(StartupError) {
    let all = segmentFirsts()
    for first in all {
      outcome.segments[first] = FileIO.size(directory + "/" + JournalFormatV1.segmentName(first: first))
    }
    // Segments before the one holding `covers + 1` add nothing to the snapshot; they stay only
    // for the fallback snapshot, so damage in them cannot stop the replay.
    let start = all.lastIndex { $0 <= outcome.snapshotCovers + 1 } ?? 0
    var lastApplied = store.nextSeq - 1
    var nextSeq = max(store.nextSeq, (all.last ?? 0) + 1)
    for n in all.indices where n >= start {
      let name = JournalFormatV1.segmentName(first: all[n])
      let bytes: [UInt8]
      do { bytes = try FileIO.read(directory + "/" + name) ?? [] } catch {
        throw .unavailable("cannot read \(error)")
      }
      let unread = try replaySegment(bytes, name: name, isLast: n == all.count - 1, lastApplied: &lastApplied)
      guard let unread else { continue }
      let later = Array(all[(n + 1)...])
      let laterMax = later.compactMap { maxValidSeq(JournalFormatV1.segmentName(first: $0)) }.max()
      nextSeq = max(nextSeq, lastApplied + UInt64(unread) + 1, (laterMax ?? 0) + 1)
      lossWarning(name: name, from: lastApplied + 1, to: laterMax, laterSegments: later.count)
      outcome.setAside = ([all[n]] + later).map { JournalFormatV1.segmentName(first: $0) }
      break
    }
    outcome.nextSeq = max(nextSeq, lastApplied + 1)
    store.advanceSeq(to: outcome.nextSeq)
  }

  /// Replays one segment. Returns nil when it was read to the end, or the number of bytes left
  /// unread when damage stopped the replay.
  private mutating func replaySegment(
    _ bytes: [UInt8], name: String, isLast: Bool, lastApplied: inout UInt64
  ) throws(StartupError) -> Int? {
    let result = bytes.withUnsafeBytes { raw -> Result<Int?, StartupError> in
      do throws(StartupError) {
        return .success(try replaySegment(SegmentReader(raw), name: name, isLast: isLast, lastApplied: &lastApplied))
      } catch {
        return .failure(error)
      }
    }
    return try result.get()
  }

  private mutating func replaySegment(
    _ reader: SegmentReader, name: String, isLast: Bool, lastApplied: inout UInt64
  ) throws(StartupError) -> Int? {
    let size = reader.bytes.count
    guard let version = reader.headerVersion else {
      if isLast && size < JournalFormatV1.headerSize {  // cut short while being created
        cutTail(name: name, at: 0, reason: "incomplete segment header")
        return nil
      }
      return size
    }
    if version > JournalFormatV1.version {
      throw StartupError(
        .unsupportedVersion(file: name, version: .int(Int64(version))),
        "\(directory)/\(name) has journal format version \(version), newer than this build reads; nothing was touched")
    }
    var offset = JournalFormatV1.headerSize
    while true {
      switch JournalFormatV1.readRecord(reader, at: offset) {
      case .end:
        return nil
      case .record(let record):
        guard apply(record) else { return size - offset }
        lastApplied = max(lastApplied, record.seq)
        offset = record.end
      case .torn where isLast && !JournalFormatV1.validRecordFollows(reader, after: offset):
        cutTail(name: name, at: offset, reason: "torn write at the end of the journal")
        return nil
      case .torn, .damaged:
        return size - offset
      }
    }
  }

  /// The highest seq among the intact records of a segment (records after damage are not applied,
  /// but their seqs must never be handed out again).
  private func maxValidSeq(_ name: String) -> UInt64? {
    guard let bytes = try? FileIO.read(directory + "/" + name) else { return nil }
    return bytes.withUnsafeBytes { raw in
      let reader = SegmentReader(raw)
      guard reader.headerVersion != nil else { return nil }
      var offset = JournalFormatV1.headerSize
      var best: UInt64? = nil
      while case .record(let record) = JournalFormatV1.readRecord(reader, at: offset) {
        best = max(best ?? 0, record.seq)
        offset = record.end
      }
      return best
    }
  }

  /// Applies one record; false if its payload does not decode.
  private mutating func apply(_ record: JournalFormatV1.Record) -> Bool {
    guard let value = try? JSONReader.parse(Array(record.payload), maxDepth: 1000) else { return false }
    switch record.type {
    case .add:
      guard let item = try? PendingItem(decoding: value) else { return false }
      if item.seq > outcome.snapshotCovers && item.seq >= store.nextSeq {
        store.append(item)
      }
    case .remove:
      guard case .array(let values) = value else { return false }
      let seqs = values.compactMap { $0.intValue.map(UInt64.init) }.sorted()
      if record.seq > outcome.snapshotCovers { store.remove(seqs: seqs.filter { store.contains(seq: $0) }) }
    }
    return true
  }

  // MARK: - Damage

  private mutating func cutTail(name: String, at offset: Int, reason: String) {
    quarantine(name)
    let path = directory + "/" + name
    _ = truncate(path, off_t(offset))
    outcome.segments[JournalFormatV1.segmentFirst(name) ?? 0] = offset
    warn("tornTail", "\(reason): \(name) was cut at byte \(offset) (a copy is in quarantine/)")
  }

  private mutating func lossWarning(name: String, from seq: UInt64, to last: UInt64?, laterSegments: Int) {
    let message =
      "journal \(name) is damaged: replay stopped before seq \(seq); it and \(laterSegments) later"
      + " segments were moved to quarantine/ unapplied"
    log.error(message)
    outcome.warnings.append(
      .object([
        JSONMember("code", .string("recoveredWithLoss")), JSONMember("message", .string(message)),
        JSONMember("file", .string(name)), JSONMember("fromSeq", .int(Int64(seq))),
        JSONMember("toSeq", last.map { .int(Int64($0)) } ?? .null),
      ]))
  }

  private mutating func warn(_ code: String, _ message: String) {
    log.warn(message)
    outcome.warnings.append(.object([JSONMember("code", .string(code)), JSONMember("message", .string(message))]))
  }

  /// Copies a file into `quarantine/` before anything touches it, as format 2 does (never through a
  /// planted `quarantine` symlink).
  private func quarantine(_ name: String) {
    StoreFiles.quarantine(directory: directory, name: name)
  }
}
