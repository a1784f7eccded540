import Foundation
import Testing

@testable import OutboxCommandLine
@testable import OutboxDelivery
@testable import OutboxDomain
@testable import OutboxJSON
@testable import OutboxJSONRPC
@testable import OutboxServer
@testable import OutboxStore
@testable import OutboxSupport
@testable import OutboxTransport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The binary log and the checkpoint: round trips, torn and damaged records, hostile fields.
@Suite struct SegmentFormatTests {
  private func records(_ bytes: [UInt8]) -> [SegmentReader.ReadResult] {
    bytes.withUnsafeBytes { raw in
      let reader = SegmentReader(raw)
      var out: [SegmentReader.ReadResult] = []
      var offset = SegmentFormat.headerSize
      while true {
        let result = reader.read(at: offset)
        out.append(result)
        guard case .record(let record) = result else { return out }
        offset = record.end
      }
    }
  }

  private func sample() -> [UInt8] {
    var out = SegmentFormat.header
    Array(#","name":"é""#.utf8).withUnsafeBytes {
      SegmentFormat.appendItem(
        seq: 5, savedAt: -3, deliveries: 2, kind: .userAttribute, hasUser: true, id: ItemID(client: Array("c1".utf8)),
        body: $0, to: &out)
    }
    SegmentFormat.appendRemove([5, 9], recordSeq: 6, to: &out)
    SegmentFormat.appendLease(Lease(flushId: "f", seqs: [5], expiresAt: 77, note: [1, 2]), recordSeq: 7, to: &out)
    SegmentFormat.appendLeaseEnd(flushId: "f", outcome: .expired, counts: [(5, 3)], recordSeq: 8, to: &out)
    return out
  }

  @Test func recordsRoundTrip() throws {
    let bytes = sample()
    let results = records(bytes)
    #expect(results.count == 5)
    guard case .record(let item) = results[0], case .record(let remove) = results[1], case .end = results[4] else {
      Issue.record("unexpected \(results)")
      return
    }
    let decoded = try #require(ItemRecord(item.payload))
    #expect(item.seq == 5 && decoded.savedAt == -3 && decoded.deliveries == 2 && decoded.kind == .userAttribute)
    #expect(
      decoded.hasUser && decoded.id.client == Array("c1".utf8) && Array(decoded.body) == Array(#","name":"é""#.utf8))
    var cursor = PayloadCursor(remove.payload)
    #expect(cursor.seqs() == [5, 9])
    bytes.withUnsafeBytes { #expect(SegmentReader($0).headerVersion == 2) }
  }

  @Test func aCutRecordIsTornAndAFlippedByteIsDamage() {
    var bytes = sample()
    let cut = Array(bytes.dropLast(3))
    guard case .torn = records(cut).last! else {
      Issue.record("a cut record must read as torn")
      return
    }
    bytes[SegmentFormat.headerSize + 20] ^= 0x40
    guard case .damaged = records(bytes).first! else {
      Issue.record("a flipped byte must read as damage")
      return
    }
    bytes.withUnsafeBytes { #expect(SegmentReader($0).validRecordFollows(after: SegmentFormat.headerSize)) }
  }

  @Test func forgedCountsAndLengthsNeitherTrapNorAllocate() {
    var payload: [UInt8] = []
    payload.appendLE(UInt32.max)  // a count of 4 billion seqs, with none following
    payload.withUnsafeBytes {
      var cursor = PayloadCursor($0)
      #expect(cursor.seqs() == nil)
    }
    let short: [UInt8] = [1, 2, 3]
    short.withUnsafeBytes { #expect(ItemRecord($0) == nil) }
    var out = SegmentFormat.header
    out.appendLE(UInt32(0xFFFF_FFF0))
    out.append(contentsOf: [UInt8](repeating: 1, count: 20))
    guard case .damaged = records(out).first! else {
      Issue.record("an implausible length is damage")
      return
    }
  }

  @Test func checkpointRoundTripsAndRefusesUnknownVersions() throws {
    let lease = Lease(flushId: "01a-f", seqs: [3, 4], expiresAt: 1_800_000_000_000, note: Array(#"{"a":1}"#.utf8))
    let checkpoint = Checkpoint(
      createdAt: 1_700_000_000_000, coversSeq: 9, nextSeq: 10, firstSeq: 3, items: 2, segments: [1, 7], leases: [lease])
    #expect(try Checkpoint.decode(checkpoint.encode()) == checkpoint)
    for key: UInt64 in [0, 0xFEDC_BA98_7654_3210, .max] {  // the id key, as 16 hex digits
      var keyed = checkpoint
      keyed.idKey = key
      #expect(try Checkpoint.decode(keyed.encode()) == keyed)
    }
    let text = String(decoding: checkpoint.encode(), as: UTF8.self)
    for version in ["2.0", "1e30", "18446744073709551616", "3", "\"2\"", "-2"] {
      let crafted = Array(text.replacingOccurrences(of: "\"version\":2,", with: "\"version\":\(version),").utf8)
      #expect(throws: Checkpoint.DecodeError.self) { try Checkpoint.decode(crafted) }
      do { _ = try Checkpoint.decode(crafted) } catch {
        guard case .unsupportedVersion = error else {
          Issue.record("version \(version) must be unsupported, not \(error)")
          continue
        }
      }
    }
  }

  @Test func checkpointWithNegativeSeqsOrABadChecksumIsCorrupt() throws {
    let checkpoint = Checkpoint(createdAt: 0, coversSeq: 1, nextSeq: 2, firstSeq: 2, items: 0, segments: [], leases: [])
    var lines = String(decoding: checkpoint.encode(), as: UTF8.self).split(separator: "\n").map(String.init)
    lines[0] = lines[0].replacingOccurrences(of: "\"coversSeq\":1", with: "\"coversSeq\":-5")
    var header = Array((lines[0] + "\n").utf8)
    let crc = CRC32C.checksum(header)
    header.append(contentsOf: Array("{\"end\":true,\"crc32c\":\(crc)}\n".utf8))
    #expect(throws: Checkpoint.DecodeError.corrupt("a header field is missing or out of range")) {
      try Checkpoint.decode(header)
    }
    var flipped = checkpoint.encode()
    flipped[30] ^= 1
    #expect(throws: Checkpoint.DecodeError.self) { try Checkpoint.decode(flipped) }
    for key in ["\"12\"", "\"fedcba987654321g\"", "12", "\"0x00000000000000\"", "\"+fedcba987654321\""] {
      var keyed = Array((lines[0].replacingOccurrences(of: "-5", with: "1").dropLast() + ",\"idKey\":\(key)}\n").utf8)
      let crc = CRC32C.checksum(keyed)
      keyed.append(contentsOf: Array("{\"end\":true,\"crc32c\":\(crc)}\n".utf8))
      #expect(throws: Checkpoint.DecodeError.corrupt("idKey is not 16 hex digits"), "\(key)") {
        try Checkpoint.decode(keyed)
      }
    }
  }
}

@Suite struct CRC32CTests {
  @Test func knownVectorAndHardwareAgreesWithTheTables() {
    #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
    var generator = SystemRandomNumberGenerator()
    for length in [0, 1, 7, 8, 9, 31, 32, 33, 39, 40, 63, 64, 65, 1000, 4099] {
      let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
      let software = bytes.withUnsafeBytes { CRC32C.software($0) }
      #expect(CRC32C.checksum(bytes) == software, "length \(length)")
      let split = length / 3
      let continued = bytes.withUnsafeBytes {
        CRC32C.checksum(
          UnsafeRawBufferPointer(rebasing: $0[split...]),
          continuing: CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[..<split])))
      }
      #expect(continued == software, "continued, length \(length)")
    }
  }

  /// Three checksums computed together are each the one computed alone, whatever their lengths.
  @Test func threeAtOnceAgreeWithOneAtATime() {
    var generator = SystemRandomNumberGenerator()
    let lengths = [0, 1, 7, 8, 9, 31, 33, 64, 65, 223, 230, 1000]
    for _ in 0..<200 {
      let parts = (0..<3).map { _ in
        (0..<lengths.randomElement(using: &generator)!).map { _ in UInt8.random(in: 0...255, using: &generator) }
      }
      let alone = parts.map { part in part.withUnsafeBytes { CRC32C.software($0) } }
      let together = parts[0].withUnsafeBytes { a in
        parts[1].withUnsafeBytes { b in parts[2].withUnsafeBytes { c in CRC32C.checksums(a, b, c) } }
      }
      #expect([together.0, together.1, together.2] == alone, "lengths \(parts.map(\.count))")
    }
  }

  /// Item records appended without their checksum get exactly the one `appendItem` writes, three
  /// at a time or alone, and the other records are left as they are.
  @Test func checksumsWrittenLaterMatchThoseWrittenInPlace() {
    var inPlace: [UInt8] = []
    var later: [UInt8] = []
    for n in 0..<7 {
      let body = Array("{\"name\":\"e\(String(repeating: "x", count: n * 13))\"}".utf8)
      func append(to out: inout [UInt8], checksum: Bool) {
        body.withUnsafeBytes {
          SegmentFormat.appendItem(
            seq: UInt64(n), savedAt: 1, deliveries: 0, kind: .customEvent, hasUser: false,
            id: ItemID(high: UInt64(n), low: 9), body: $0, to: &out, checksum: checksum)
        }
      }
      append(to: &inPlace, checksum: true)
      append(to: &later, checksum: false)
      if n == 3 {
        SegmentFormat.appendRemove([1, 2], recordSeq: 100, to: &inPlace)
        SegmentFormat.appendRemove([1, 2], recordSeq: 100, to: &later)
      }
    }
    #expect(later != inPlace)
    later.withUnsafeMutableBytes { SegmentFormat.fillItemChecksums($0) }
    #expect(later == inPlace)
  }

  /// Starting a store checks each segment's header: only its first bytes are read, not the file.
  @Test func aLimitedReadReadsTheFirstBytesOnly() throws {
    let path = Paths.temporaryDirectory().appendingPathComponent("file").path
    let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    let fd = try FileIO.createExclusive(path)
    try FileIO.writeAll(fd, bytes, path: path)
    close(fd)
    #expect(try FileIO.read(path, limit: SegmentFormat.headerSize) == Array(bytes.prefix(SegmentFormat.headerSize)))
    #expect(try FileIO.read(path, limit: 99_999) == Array(bytes.prefix(99_999)))
    #expect(try FileIO.read(path, limit: 100_000) == bytes)
    #expect(try FileIO.read(path, limit: 1 << 30) == bytes)
    #expect(try FileIO.read(path) == bytes)
    #expect(try FileIO.read(path + ".none", limit: 16) == nil)
  }
}
