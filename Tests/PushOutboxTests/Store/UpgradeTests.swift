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

/// A format-1 store (JSON snapshot and JSON-payload journal) is read and rewritten as format 2.
@Suite struct UpgradeTests {
  private func item(_ seq: UInt64, _ kind: ItemKind, _ body: String, deliveries: UInt32 = 0) -> PendingItem {
    PendingItem(
      seq: seq, id: ItemID(client: Array("01a00000-0000-7000-8000-00000000000\(seq)".utf8)), kind: kind,
      savedAt: 1_767_225_600_000 + Int64(seq), deliveryCount: deliveries, hasUser: body.contains("\"user\""),
      body: Array(body.utf8))
  }

  private func writeV1Store(_ dir: URL) throws -> [PendingItem] {
    let snapshotItems = [
      item(
        1, .customEvent,
        #","user":{"externalId":"u1"},"name":"open","properties":{"n":1},"time":"2026-01-01T00:00:00.000Z""#,
        deliveries: 2),
      item(2, .customAttribute, #","user":{"brazeId":"b2"},"key":"plan","value":"pro","op":"set""#),
    ]
    let snapshot = SnapshotFileV1.encode(
      SnapshotState(items: snapshotItems[...], nextSeq: 3, coversSeq: 2), createdAt: 1_767_225_600_000)
    try Data(snapshot).write(to: dir.appendingPathComponent("snapshot.json"))
    let added = item(
      3, .userAttribute, #","user":{"alias":{"name":"a","label":"crm"}},"field":"email","value":"x@y.z""#)
    let dropped = item(4, .customEvent, #","name":"gone","properties":{},"time":"2026-01-01T00:00:00.000Z""#)
    var journal = JournalFormatV1.header
    for record in [added, dropped] {
      JournalFormatV1.appendRecord(.add, seq: record.seq, to: &journal) { record.encodeJSON(into: &$0) }
    }
    JournalFormatV1.appendRecord(.remove, seq: 5, payload: Array("[4]".utf8), to: &journal)
    try Data(journal).write(to: dir.appendingPathComponent("journal.00000000000000000003"))
    return snapshotItems + [added]
  }

  private func flushItems(_ dir: URL) throws -> JSONValue? {
    let server = InProcessServer {
      $0.memory = false
      $0.storePath = dir.path
    }
    try server.service.openDiskInTests()
    defer { server.service.disk?.finish(server.service.store, now: server.service.clock.now()) }
    return try server.request("flushPending", #"{"leaseMs":1}"#).at("result.items")
  }

  @Test func aFormatOneStoreIsUpgradedWithEveryItemIntact() throws {
    let dir = Paths.temporaryDirectory()
    let expected = try writeV1Store(dir)
    let items = try #require(try flushItems(dir))
    var want: [UInt8] = [UInt8(ascii: "[")]
    for (n, item) in expected.enumerated() {
      if n > 0 { want.append(UInt8(ascii: ",")) }
      item.encodeJSON(into: &want)
    }
    want.append(UInt8(ascii: "]"))
    #expect(items == (try JSONReader.parse(want)))
    let names = try FileManager.default.contentsOfDirectory(atPath: dir.path)
    #expect(!names.contains("snapshot.json") && !names.contains { $0.hasPrefix("journal.") })
    #expect(names.contains("checkpoint.json") && names.contains { $0.hasPrefix("segment.") })
    let again = try flushItems(dir)  // and it reads back as format 2
    #expect(again == items)
  }

  @Test func aFormatOneSnapshotWithNegativeSeqsIsCorruptNotACrash() throws {
    var header = Array(
      #"{"format":"push-outbox-snapshot","version":1,"coversSeq":-4,"nextSeq":-1,"items":0,"createdAt":"2026-01-01T00:00:00.000Z"}"#
        .utf8)
    header.append(0x0A)
    let crc = CRC32C.checksum(header)
    header.append(contentsOf: Array(#"{"end":true,"items":0,"crc32c":\#(crc)}"#.utf8))
    header.append(0x0A)
    #expect(throws: SnapshotError.self) { try SnapshotFileV1.decode(header, path: "snapshot.json") }
  }
}
