import Foundation
import Testing

@testable import OutboxStore
@testable import OutboxSupport

/// A write handed to the writer thread (`Journal.beginCommit`, landed by `takeLanded`) leaves the
/// file and the segments' bookkeeping exactly as a synchronous commit at the same point does: the
/// same bytes (checksums written on the other thread included), the same rotations, the same
/// counts. Seeded random runs of items and other records, with commits at random points.
@Suite struct JournalHandOverTests {
  @Test(arguments: 1...12)
  func aHandedOverWriteLeavesWhatASynchronousCommitLeaves(seed: UInt64) throws {
    var random = SeededGenerator(seed: seed)
    let (handed, plain) = (Paths.temporaryDirectory().path, Paths.temporaryDirectory().path)
    let rotateAt = 2048 + Int(random.next() % 4096)
    let a = Journal(directory: handed, policy: .everysec, segments: [], rotateAt: rotateAt)
    let b = Journal(directory: plain, policy: .everysec, segments: [], rotateAt: rotateAt)
    var seq: UInt64 = 0
    var started = 0
    for _ in 0..<400 {
      seq += 1
      let roll = random.next() % 10
      if roll < 7 {
        let body = Array(
          "{\"name\":\"e\",\"n\":\(seq),\"pad\":\"\(String(repeating: "x", count: Int(random.next() % 90)))\"}".utf8)
        for journal in [a, b] {
          body.withUnsafeBytes {
            journal.appendItem(
              seq: seq, savedAt: Int64(seq), kind: .customEvent, hasUser: false, id: ItemID(high: seq, low: 7), body: $0
            )
          }
        }
      } else {
        for journal in [a, b] { journal.append(.remove([seq - 1, seq / 2]), seq: seq) }
      }
      guard random.next() % 4 == 0 else { continue }
      // The handed-over journal lands its last write first, as the store does before each commit.
      if let landed = a.takeLanded() { #expect(landed == nil, "a write failed") }
      if a.beginCommit() {
        started += 1
        #expect(a.isWriting)
      } else {
        try a.commit()
      }
      try b.commit()
      if !a.isWriting { #expect(a.segments == b.segments) }
    }
    if let landed = a.takeLanded() { #expect(landed == nil, "a write failed") }
    try a.commit()
    try b.commit()
    #expect(a.writtenThrough == seq && b.writtenThrough == seq)
    #expect(a.segments == b.segments)
    a.close()
    b.close()
    #expect(started > 10, "the run handed over too few writes to say anything")
    let names = try FileManager.default.contentsOfDirectory(atPath: plain).sorted()
    #expect(try FileManager.default.contentsOfDirectory(atPath: handed).sorted() == names)
    #expect(names.count > 2, "the run rotated too few segments to say anything")
    for name in names {
      #expect(
        FileManager.default.contents(atPath: handed + "/" + name)
          == FileManager.default.contents(atPath: plain + "/" + name),
        "\(name) differs")
    }
  }

  /// A record is written once the write that carries it landed, and not before.
  @Test func aRecordIsWrittenOnceItsWriteLanded() throws {
    let journal = Journal(directory: Paths.temporaryDirectory().path, policy: .everysec, segments: [])
    defer { journal.close() }
    journal.append(.remove([1]), seq: 1)
    try journal.commit()  // opens the segment
    #expect(journal.writtenThrough == 1)
    var release: (@Sendable () -> Void)? = nil
    journal.execute = { job in release = job }  // the write waits until the test runs it
    journal.append(.remove([2]), seq: 2)
    #expect(journal.beginCommit())
    journal.append(.remove([3]), seq: 3)
    #expect(journal.writtenThrough == 1, "nothing landed yet")
    #expect(!journal.beginCommit(), "one write in flight at most")
    release?()
    #expect(journal.takeLanded() == .some(nil))
    #expect(journal.writtenThrough == 2, "the landed write carried seq 2, not 3")
    #expect(journal.takeLanded() == nil, "an outcome is handed over once")
    try journal.commit()
    #expect(journal.writtenThrough == 3)
  }

  /// The records gathered after a rotation go out off the loop's thread too: `beginCommit` opens
  /// the next segment itself instead of leaving the write to a synchronous commit.
  @Test func theFirstWriteAfterARotationIsHandedOverToo() throws {
    let directory = Paths.temporaryDirectory().path
    let journal = Journal(directory: directory, policy: .everysec, segments: [], rotateAt: 1024)
    defer { journal.close() }
    let body = Array("{\"name\":\"e\",\"pad\":\"\(String(repeating: "x", count: 600))\"}".utf8)
    func item(_ seq: UInt64) {
      body.withUnsafeBytes {
        journal.appendItem(
          seq: seq, savedAt: 1, kind: .customEvent, hasUser: false, id: ItemID(high: seq, low: 1), body: $0)
      }
    }
    item(1)
    try journal.commit()  // opens the first segment
    item(2)
    #expect(journal.beginCommit())
    #expect(journal.takeLanded() == .some(nil))
    #expect(!journal.isOpen, "the write passed 1024 bytes: the segment closed as it landed")
    item(3)
    #expect(journal.beginCommit(), "the next segment is opened for the handed-over write")
    #expect(journal.takeLanded() == .some(nil))
    #expect(journal.writtenThrough == 3)
    #expect(journal.segments.map(\.first) == [1, 3])
    let names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    #expect(names == [SegmentFormat.name(first: 1), SegmentFormat.name(first: 3)])
  }

  /// The two buffers trade places: a landed write's buffer gathers the next records with its
  /// memory kept, never copied or allocated again (the loop would otherwise fill fresh pages).
  @Test func aLandedWritesBufferGathersTheRecordsAfterTheNext() throws {
    let journal = Journal(directory: Paths.temporaryDirectory().path, policy: .everysec, segments: [])
    defer { journal.close() }
    journal.append(.remove([1]), seq: 1)
    try journal.commit()  // opens the segment
    var seq: UInt64 = 1
    func gather() {
      for _ in 0..<50 {
        seq += 1
        journal.append(.remove([seq]), seq: seq)
      }
    }
    gather()
    let first = journal.gatheringBase
    #expect(journal.beginCommit())
    gather()
    let second = journal.gatheringBase
    #expect(first != nil && second != nil && first != second)
    #expect(journal.takeLanded() == .some(nil))
    #expect(journal.beginCommit())
    #expect(journal.gatheringBase == first, "the landed write's buffer gathers again")
    gather()
    #expect(journal.gatheringBase == first, "and keeps its memory as it fills")
    #expect(journal.takeLanded() == .some(nil))
    #expect(journal.beginCommit())
    #expect(journal.gatheringBase == second)
    #expect(journal.takeLanded() == .some(nil))
    #expect(journal.writtenThrough == seq)
  }
}
