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

  /// The records gathered after a rotation go out off the loop's thread too: the handed-over write
  /// opens the next segment instead of leaving the write to a synchronous commit.
  @Test func theFirstWriteAfterARotationIsHandedOverToo() throws {
    let directory = Paths.temporaryDirectory().path
    let journal = Journal(directory: directory, policy: .everysec, segments: [], rotateAt: 1024)
    defer { journal.close() }
    try rotateOnce(journal)
    item(3, journal)
    #expect(journal.beginCommit(), "the next segment is opened for the handed-over write")
    #expect(journal.takeLanded() == .some(nil))
    #expect(journal.writtenThrough == 3)
    #expect(journal.segments.map(\.first) == [1, 3])
    let names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    #expect(names == [SegmentFormat.name(first: 1), SegmentFormat.name(first: 3)])
  }

  /// After a rotation the writer thread creates the next segment, not `beginCommit` on the loop's
  /// thread: until the handed-over write runs there is no such file, and the bytes in the air
  /// count the new segment's header.
  @Test func theWriterCreatesTheSegmentAfterARotation() throws {
    let directory = Paths.temporaryDirectory().path
    let journal = Journal(directory: directory, policy: .everysec, segments: [], rotateAt: 1024)
    defer { journal.close() }
    try rotateOnce(journal)
    var release: (@Sendable () -> Void)? = nil
    journal.execute = { job in release = job }  // the write waits until the test runs it
    item(3, journal)
    let gathered = journal.totalBytes
    #expect(journal.beginCommit())
    let third = directory + "/" + SegmentFormat.name(first: 3)
    #expect(!FileManager.default.fileExists(atPath: third), "the loop's thread created the segment")
    #expect(journal.segments.map(\.first) == [1])
    #expect(journal.totalBytes == gathered + Int64(SegmentFormat.headerSize))
    release?()
    #expect(journal.takeLanded() == .some(nil))
    #expect(FileManager.default.fileExists(atPath: third))
    #expect(journal.segments.map(\.first) == [1, 3])
    #expect(journal.isOpen)
    #expect(journal.writtenThrough == 3)
    #expect(journal.totalBytes == gathered + Int64(SegmentFormat.headerSize))
  }

  /// A segment the writer cannot create fails its write and nothing else: the item record goes,
  /// the other records wait for the next commit, nothing planted at the name is touched, and the
  /// next commit opens a segment of its own.
  @Test func aSegmentTheWriterCannotCreateFailsOnlyItsWrite() throws {
    let directory = Paths.temporaryDirectory().path
    let journal = Journal(directory: directory, policy: .everysec, segments: [], rotateAt: 1024)
    defer { journal.close() }
    try rotateOnce(journal)
    let third = directory + "/" + SegmentFormat.name(first: 3)
    try FileManager.default.createDirectory(atPath: third, withIntermediateDirectories: false)
    item(3, journal)
    journal.append(.remove([1]), seq: 4)
    #expect(journal.beginCommit(), "the write is handed over; the writer finds the name taken")
    guard case .some(.some(let failure)) = journal.takeLanded() else {
      Issue.record("the write did not fail")
      return
    }
    #expect(failure.operation == "create" && failure.path == third)
    #expect(journal.segments.map(\.first) == [1])
    #expect(!journal.isOpen)
    #expect(journal.writtenThrough == 2)
    #expect(!journal.lastCutFailed, "nothing reached a file, so nothing was cut")
    var isDirectory: ObjCBool = false
    #expect(FileManager.default.fileExists(atPath: third, isDirectory: &isDirectory) && isDirectory.boolValue)
    try FileManager.default.removeItem(atPath: third)
    try journal.commit()
    #expect(journal.segments.map(\.first) == [1, 4], "the kept removal opens the next segment")
    #expect(journal.writtenThrough == 4)
    let bytes = try #require(FileManager.default.contents(atPath: directory + "/" + SegmentFormat.name(first: 4)))
    var kinds: [UInt8] = []
    Array(bytes.dropFirst(SegmentFormat.headerSize)).withUnsafeBytes { raw in
      SegmentFormat.forEachRecord(in: raw) { _, type in kinds.append(type) }
    }
    #expect(kinds == [SegmentFormat.RecordType.remove.rawValue], "the item record was dropped")
  }

  /// Item `seq` with a 600-byte body: two pass `rotateAt: 1024`.
  private func item(_ seq: UInt64, _ journal: Journal) {
    let body = Array("{\"name\":\"e\",\"pad\":\"\(String(repeating: "x", count: 600))\"}".utf8)
    body.withUnsafeBytes {
      journal.appendItem(
        seq: seq, savedAt: 1, kind: .customEvent, hasUser: false, id: ItemID(high: seq, low: 1), body: $0)
    }
  }

  /// Writes items 1 and 2 to a journal rotating at 1 KiB: segment 1 is closed after it.
  private func rotateOnce(_ journal: Journal) throws {
    item(1, journal)
    try journal.commit()  // opens the first segment
    item(2, journal)
    #expect(journal.beginCommit())
    #expect(journal.takeLanded() == .some(nil))
    #expect(!journal.isOpen, "the write passed 1024 bytes: the segment closed as it landed")
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
