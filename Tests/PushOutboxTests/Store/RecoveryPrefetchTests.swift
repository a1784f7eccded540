import Foundation
import Testing

@testable import OutboxJSON
@testable import OutboxStore
@testable import OutboxSupport

/// Recovery reads segments ahead on a second thread (`SegmentPrefetch`). Whatever the files hold,
/// that must change nothing it decides: the same rows, the same segment accounting, the same warnings
/// and the same files afterwards (cut tails, quarantined copies) as reading each segment in turn.
@Suite struct RecoveryPrefetchTests {
  /// Segments of random items and removals, some damaged (a flipped byte, a zero-filled run, a cut
  /// tail, a record header with a huge length), recovered twice: with and without reading ahead.
  @Test(arguments: 1...24)
  func readingAheadChangesNothingRecoveryDecides(seed: UInt64) throws {
    var rng = SeededGenerator(seed: seed)
    let dir = Paths.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    try writeSegments(dir.appendingPathComponent("a"), &rng)
    try FileManager.default.copyItem(at: dir.appendingPathComponent("a"), to: dir.appendingPathComponent("b"))
    let ahead = try recover(dir.appendingPathComponent("a"), prefetch: true)
    let inTurn = try recover(dir.appendingPathComponent("b"), prefetch: false)
    #expect(ahead.rows.count > 0)
    #expect(ahead.rows == inTurn.rows)
    #expect(ahead.segments == inTurn.segments)
    #expect(ahead.warnings == inTurn.warnings)
    #expect(ahead.files == inTurn.files)
  }

  /// A segment that cannot be read refuses the start while the second thread is reading the ones
  /// after it. Its thread then stops, and the reader goes with it, however the two interleave: a
  /// semaphore left below its starting count when it was freed trapped the process (CI, issue 21).
  @Test func anUnreadableSegmentStopsTheReadingAheadCleanly() throws {
    let dir = Paths.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    var rng = SeededGenerator(seed: 99)
    try writeSegments(dir, &rng, count: 8...8, damaged: false)
    let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("segment.") }
      .sorted()
    // The second segment is a directory: opened, found not a regular file, refused.
    try FileManager.default.removeItem(at: dir.appendingPathComponent(names[1]))
    try FileManager.default.createDirectory(
      at: dir.appendingPathComponent(names[1]), withIntermediateDirectories: false)
    for _ in 0..<200 {
      #expect(throws: StartupError.self) {
        _ = try Recovery.run(directory: dir.path, store: Store(), acceptLoss: true, log: Log(level: .error))
      }
    }
    usleep(200_000)  // the read-ahead threads end (and are freed) while the test still runs
  }

  private struct Recovered {
    var rows: [[UInt8]]
    var segments: [SegmentInfo]
    var warnings: [String]
    var files: [String: Data]
  }

  private func recover(_ dir: URL, prefetch: Bool) throws -> Recovered {
    let store = Store()
    let outcome = try Recovery.run(
      directory: dir.path, store: store, acceptLoss: true, log: Log(level: .error), prefetch: prefetch)
    let items = store.items
    let rows = items.table.rows.filter { !items.table.has(.removed, $0) }.map {
      Array("\(items.table.seqs[$0]) ".utf8) + items.body(row: $0)
    }
    var files: [String: Data] = [:]
    let all = FileManager.default.enumerator(atPath: dir.path)?.compactMap { $0 as? String } ?? []
    for name in all {
      var isDirectory: ObjCBool = false
      let path = dir.appendingPathComponent(name).path
      guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
        continue
      }
      // A quarantined copy's name ends with the time it was made: compared without it.
      let kept = name.hasPrefix("quarantine/") ? String(name[..<(name.lastIndex(of: ".") ?? name.endIndex)]) : name
      // store.id is random, written by each recovery of a store without one: compared by its name.
      files[kept] = name == StoreIdentity.fileName ? Data() : FileManager.default.contents(atPath: path)
    }
    let warnings = outcome.warnings.map { value in
      var out: [UInt8] = []
      value.encodeJSON(into: &out)
      return String(decoding: out, as: UTF8.self)
    }
    return Recovered(rows: rows, segments: outcome.segments, warnings: warnings, files: files)
  }

  /// `count` segments from seq 1, then damage in one or two of them (unless not `damaged`).
  private func writeSegments(
    _ dir: URL, _ rng: inout SeededGenerator, count: ClosedRange<Int> = 3...6, damaged: Bool = true
  ) throws {
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    var seq: UInt64 = 1
    var held: [UInt64] = []
    var files: [(String, [UInt8])] = []
    for _ in 0..<Int.random(in: count, using: &rng) {
      let name = SegmentFormat.name(first: seq)
      var bytes = SegmentFormat.header
      for _ in 0..<Int.random(in: 20...300, using: &rng) {
        if !held.isEmpty && Int.random(in: 0..<8, using: &rng) == 0 {
          let gone = held.remove(at: Int.random(in: 0..<held.count, using: &rng))
          SegmentFormat.appendRemove([gone], recordSeq: seq, to: &bytes)
        } else {
          let user = Int.random(in: 0..<40, using: &rng)
          let body = #","user":{"externalId":"u\#(user)"},"name":"e\#(seq % 5)","properties":{"n":\#(seq)}"#
          Array(body.utf8).withUnsafeBytes {
            SegmentFormat.appendItem(
              seq: seq, savedAt: 1_764_000_000_000 + Int64(seq), deliveries: 0, kind: .customEvent, hasUser: true,
              id: ItemID(high: seq, low: ~seq), body: $0, to: &bytes)
          }
          held.append(seq)
        }
        seq += 1
      }
      files.append((name, bytes))
    }
    for _ in 0..<(damaged ? Int.random(in: 1...2, using: &rng) : 0) {
      let n = Int.random(in: 0..<files.count, using: &rng)
      damage(&files[n].1, &rng)
    }
    for (name, bytes) in files { try Data(bytes).write(to: dir.appendingPathComponent(name)) }
  }

  private func damage(_ bytes: inout [UInt8], _ rng: inout SeededGenerator) {
    let at = Int.random(in: SegmentFormat.headerSize..<bytes.count, using: &rng)
    switch Int.random(in: 0..<4, using: &rng) {
    case 0: bytes[at] ^= UInt8.random(in: 1...255, using: &rng)
    case 1: for i in at..<min(bytes.count, at + Int.random(in: 1...64, using: &rng)) { bytes[i] = 0 }
    case 2: bytes.removeSubrange(at...)
    default: bytes.replaceSubrange(at..<min(bytes.count, at + 4), with: [0xFF, 0xFF, 0xFF, 0x7F])
    }
  }
}
