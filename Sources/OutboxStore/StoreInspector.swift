package import OutboxJSON
import OutboxSupport

/// One thing wrong with a store file: where, and why.
package struct StoreProblem: Sendable, Equatable {
  package var file: String
  /// The byte offset in `file`, when the problem has one.
  package var offset: Int?
  package var reason: String

  package var json: JSONValue {
    .object([
      JSONMember("file", .string(file)), JSONMember("offset", offset.map { .int(Int64($0)) } ?? .null),
      JSONMember("reason", .string(reason)),
    ])
  }
}

/// What `StoreInspector.inspect` found: the held items (in a `HeldItems` of its own), the live leases,
/// the files, and every problem.
package struct StoreInspection {
  package let items = HeldItems()
  package var leases: [Lease] = []
  package var checkpoint: Checkpoint?
  package var segments: [SegmentInfo] = []
  package var bytes = 0
  package var problems: [StoreProblem] = []
  /// The torn end of the newest segment of a store whose LOCK holder is alive: a write under way.
  package var liveTail: StoreProblem?
  /// The pid in LOCK, when that process is alive.
  package var livePid: Int32?

  package var ok: Bool { problems.isEmpty }

  /// Pending items (leased included, dead letters not), as `status` counts them.
  package var pendingCount: Int { items.count - items.deadCount }

  /// The seqs of leases that have not expired at `now`.
  package func leasedSeqs(now: Int64) -> Set<UInt64> {
    Set(leases.filter { $0.expiresAt > now }.flatMap(\.seqs))
  }
}

/// Reads a store without changing it: every file is opened read-only, no lock is taken, nothing is
/// quarantined, cut, renamed or created. It replays the segments with the same record decoding as
/// `Recovery` (`SegmentReader`, `ItemRecord`, `LeaseRecords`, `DeadLetterRecords`) and reports what
/// recovery would repair or refuse as problems instead.
package enum StoreInspector {
  /// Inspects `directory`. On a store a live process holds, files can change between reads: a result
  /// with problems is read again (a few times) before it is believed.
  package static func inspect(directory: String) -> StoreInspection {
    var result = once(directory: directory)
    var attempts = 1
    while !result.ok && result.livePid != nil && attempts < 4 {
      usleep(100_000)
      result = once(directory: directory)
      attempts += 1
    }
    return result
  }

  private static func once(directory: String) -> StoreInspection {
    var reading = Reading(directory: directory)
    reading.run()
    return reading.result
  }

  /// The pid written in LOCK, if that process is alive (read only: the lock itself is never taken).
  static func liveHolder(directory: String) -> Int32? {
    guard let bytes = try? FileIO.read(directory + "/LOCK") else { return nil }
    let digits = bytes.prefix(32).filter { $0 >= 48 && $0 <= 57 }
    guard !digits.isEmpty, let pid = Int32(String(decoding: digits, as: UTF8.self)), pid > 0 else { return nil }
    return kill(pid, 0) == 0 || errno == EPERM ? pid : nil
  }
}

private struct Reading {
  let directory: String
  var result = StoreInspection()
  private let buffer = ReadBuffer()
  /// Seqs the checkpoint covers that left the pending set by a record written after it (as `Recovery`).
  private var exitsAfterCover = 0

  init(directory: String) { self.directory = directory }

  mutating func problem(_ file: String, _ offset: Int?, _ reason: String) {
    result.problems.append(StoreProblem(file: file, offset: offset, reason: reason))
  }

  mutating func run() {
    result.livePid = StoreInspector.liveHolder(directory: directory)
    // The checkpoint first: a live server only adds segments after it, so none it lists can be new.
    readCheckpoint()
    let names: [String]
    do { names = try FileIO.list(directory) } catch {
      problem(directory, nil, "cannot list the store: \(error)")
      return
    }
    if names.contains(where: { $0 == "snapshot.json" || ($0.hasPrefix("journal.") && $0.utf8.count == 28) }),
      result.checkpoint == nil
    {
      problem("snapshot.json", nil, "a format-1 store: the next start upgrades it; verify reads format 2 only")
    }
    let firsts = names.compactMap(SegmentFormat.first(ofName:)).sorted()
    checkMissing(firsts)
    result.leases = result.checkpoint?.leases ?? []
    var finished = result.checkpoint?.finished ?? []
    for (n, first) in firsts.enumerated() {
      read(first: first, next: n + 1 < firsts.count ? firsts[n + 1] : nil, finished: &finished)
    }
    checkAgainstCheckpoint()
    checkLeases()
  }

  private mutating func readCheckpoint() {
    let path = directory + "/" + Checkpoint.fileName
    do {
      guard let bytes = try FileIO.read(path) else { return }
      result.bytes += bytes.count
      result.checkpoint = try Checkpoint.decode(bytes)
    } catch let error as Checkpoint.DecodeError {
      switch error {
      case .corrupt(let why): problem(Checkpoint.fileName, 0, "checkpoint is unreadable: \(why)")
      case .unsupportedVersion(let v):
        problem(Checkpoint.fileName, 0, "checkpoint version \(v) is not one this build reads")
      }
    } catch {
      problem(Checkpoint.fileName, nil, "cannot read: \(error)")
    }
  }

  private mutating func checkMissing(_ firsts: [UInt64]) {
    if let checkpoint = result.checkpoint {
      for first in checkpoint.segments where !firsts.contains(first) {
        problem(SegmentFormat.name(first: first), nil, "the checkpoint lists this segment; it is missing")
      }
      if checkpoint.firstSeq < checkpoint.nextSeq, firsts.first.map({ $0 > checkpoint.firstSeq }) ?? true {
        problem(Checkpoint.fileName, nil, "no segment holds seq \(checkpoint.firstSeq), the oldest held item")
      }
    } else if let oldest = firsts.first, oldest > 1 {
      problem(SegmentFormat.name(first: oldest), nil, "no checkpoint, and the oldest segment does not start at seq 1")
    }
  }

  // MARK: - Segments

  private mutating func read(first: UInt64, next: UInt64?, finished: inout [String]) {
    let name = SegmentFormat.name(first: first)
    var info = SegmentInfo(first: first)
    do {
      let found: Void? = try buffer.read(directory + "/" + name) { raw in
        info.bytes = raw.count
        scan(
          SegmentReader(raw), name: name, seqs: first..<(next ?? SegmentFormat.seqLimit), info: &info,
          finished: &finished)
      }
      if found == nil { problem(name, nil, "the segment vanished while it was read") }
    } catch {
      problem(name, nil, "cannot read: \(error)")
    }
    result.bytes += info.bytes
    result.segments.append(info)
  }

  private mutating func scan(
    _ reader: SegmentReader, name: String, seqs: Range<UInt64>, info: inout SegmentInfo, finished: inout [String]
  ) {
    let isLast = seqs.upperBound == SegmentFormat.seqLimit
    guard reader.headerVersion == SegmentFormat.version else {
      if isLast && reader.bytes.count < SegmentFormat.headerSize && result.livePid != nil {
        result.liveTail = StoreProblem(file: name, offset: 0, reason: "live tail: header being written")
      } else {
        problem(name, 0, reader.headerVersion == nil ? "not a segment header" : "unknown segment format version")
      }
      return
    }
    var offset = SegmentFormat.headerSize
    var lastSeq: UInt64 = 0
    while true {
      switch reader.read(at: offset) {
      case .end:
        return
      case .record(let record):
        if !seqs.contains(record.seq) {
          problem(name, offset, "record seq \(record.seq) lies outside this segment's range")
        } else if record.seq < lastSeq {
          problem(name, offset, "record seq \(record.seq) comes after seq \(lastSeq)")
        } else if !apply(record, info: &info, finished: &finished) {
          problem(name, offset, "a \(record.type) record's payload does not decode")
        }
        lastSeq = max(lastSeq, record.seq)
        offset = record.end
      case .torn where isLast && !reader.validRecordFollows(after: offset):
        if result.livePid != nil {
          result.liveTail = StoreProblem(file: name, offset: offset, reason: "live tail: a record being written")
        } else {
          problem(name, offset, "torn write at the end of the log (the next start cuts it here)")
        }
        return
      case .torn:
        problem(name, offset, "record runs past the end of the file, and intact records follow")
        guard let next = reader.nextValidRecord(after: offset) else { return }
        offset = next
      case .damaged(let why):
        problem(name, offset, why)
        guard let next = reader.nextValidRecord(after: offset) else { return }
        offset = next
      }
    }
  }

  /// Applies one record to the inspection's own store, as recovery does; false if it does not decode.
  private mutating func apply(_ record: SegmentReader.Record, info: inout SegmentInfo, finished: inout [String]) -> Bool
  {
    let items = result.items
    switch record.type {
    case .item:
      guard let item = ItemRecord(record.payload) else { return false }
      info.items += 1
      guard record.seq >= items.nextSeq else { return true }
      items.append(
        seq: record.seq, id: item.id, kind: item.kind, savedAt: item.savedAt, deliveryCount: item.deliveries,
        hasUser: item.hasUser, body: item.body, verified: false)
    case .remove:
      var cursor = PayloadCursor(record.payload)
      guard let seqs = cursor.seqs() else { return false }
      noteExits(record, seqs.reduce(0) { $0 + ($1 <= (result.checkpoint?.coversSeq ?? 0) ? 1 : 0) })
      items.remove(seqs: seqs)
    case .deadLetter, .requeue:
      guard DeadLetterRecords.apply(record, to: items) != nil else { return false }
      if record.type == .deadLetter { noteExits(record, DeadLetterRecords.count(record)) }
    case .lease, .leaseEnd:
      var raised: [UInt64] = []
      guard
        LeaseRecords.apply(
          record, to: &result.leases, finished: &finished, raised: &raised, store: items,
          covers: result.checkpoint?.coversSeq)
      else { return false }
    }
    items.advanceSeq(to: record.seq + 1)
    return true
  }

  private mutating func noteExits(_ record: SegmentReader.Record, _ count: Int) {
    guard let covers = result.checkpoint?.coversSeq, record.seq > covers else { return }
    exitsAfterCover += count
  }

  // MARK: - Cross-checks

  /// The checkpoint's counts against the records found, by `Recovery`'s rules: the pending rows it
  /// covers, plus those that left by a record after it, reach its item count; each listed segment
  /// holds at least the rows it counted there.
  private mutating func checkAgainstCheckpoint() {
    guard let checkpoint = result.checkpoint else { return }
    let table = result.items.table
    var loaded = 0
    for row in table.rows where !table.has(.removed, row) && !table.has(.dead, row) {
      if table.seqs[row] <= checkpoint.coversSeq { loaded += 1 }
    }
    if loaded + exitsAfterCover < checkpoint.items {
      problem(
        Checkpoint.fileName, nil,
        "the checkpoint counts \(checkpoint.items) pending items up to seq \(checkpoint.coversSeq); the segments hold \(loaded)"
      )
    }
    guard let held = checkpoint.held else { return }
    for (n, first) in checkpoint.segments.enumerated() {
      guard let info = result.segments.first(where: { $0.first == first }), info.items < held[n] else { continue }
      problem(
        SegmentFormat.name(first: first), nil,
        "holds \(info.items) item records; the checkpoint counts \(held[n]) held there")
    }
  }

  /// Every live lease names held items.
  private mutating func checkLeases() {
    for lease in result.leases {
      let missing = lease.seqs.filter { !result.items.contains(seq: $0) }
      guard let seq = missing.first else { continue }
      problem(
        Checkpoint.fileName, nil,
        "lease \(lease.flushId) names \(missing.count) items no segment holds (first seq \(seq))")
    }
  }
}
