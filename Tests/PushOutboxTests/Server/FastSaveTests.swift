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

/// The `saveCustomEvent` fast path must answer and store exactly what the general path does.
@Suite struct FastSaveTests {
  static let envelope = #"{"jsonrpc":"2.0","id":ID,"method":"saveCustomEvent","params":PARAMS}"#

  static let ids = ["1", "0", "-0", "-7", "9223372036854775808", "1.5", "1e3", #""abc""#, #""""#, "null", #""a\"b""#]

  static let params = [
    #"{"name":"a"}"#, #"{"name":""}"#, #"{"name":"$a"}"#, #"{"name":"a","properties":{}}"#,
    #"{"name":"a","properties":{"campaign":"spring","step":3,"ok":true,"tags":["a","b"],"price":12.5}}"#,
    #"{"properties":{"x":1},"name":"b"}"#, #"{ "name" : "a" , "properties" : {"x":1} }"#,
    #"{"name":"a","properties":{"x": 1}}"#, #"{"name":"a","properties":{"x":null}}"#,
    #"{"name":"a","properties":{"x":[null]}}"#, #"{"name":"a","properties":{"x":[[1]]}}"#,
    #"{"name":"a","properties":{"x":{"y":1}}}"#, #"{"name":"a","properties":{"time":1}}"#,
    #"{"name":"a","properties":{"event_name":1}}"#, #"{"name":"a","properties":{"$x":1}}"#,
    #"{"name":"a","properties":{"":1}}"#, #"{"name":"a","properties":{"x":1,"x":2}}"#,
    #"{"name":"a","properties":{"x":["2026-01-02T03:04:05Z"]}}"#,
    #"{"name":"a","properties":{"x":"2026-01-02T03:04:05Z"}}"#,
    #"{"name":"a","properties":{"x":-0,"y":1e999,"z":123456789012345678901234567890}}"#,
    #"{"name":"a","properties":{"x":01}}"#, #"{"name":"a","properties":{"x":"\u00e9"}}"#,
    "{\"name\":\"a\",\"properties\":{\"x\":\"\u{e9}\"}}", "{\"name\":\"a\",\"properties\":{\"x\":\"\u{2028}\"}}",
    #"{"name":"a","properties":null}"#, #"{"name":"a","other":1}"#, #"{"name":"a","time":"2026-01-02T03:04:05Z"}"#,
    #"{"name":"a","id":"c1"}"#, #"{"name":"a","user":{"external_id":"u"}}"#, #"["a"]"#,
    "{\"name\":\"" + String(repeating: "n", count: 255) + "\"}",
    "{\"name\":\"" + String(repeating: "n", count: 256) + "\"}",
    "{\"name\":\"a\",\"properties\":{\"x\":\"" + String(repeating: "v", count: 256) + "\"}}",
    "{\"name\":\"a\",\"properties\":{" + (0..<40).map { "\"k\($0)\":1" }.joined(separator: ",") + "}}",
  ]

  static let users = [
    #"{"name":"a","user":{"externalId":"u1"}}"#, #"{"name":"a","user":{"brazeId":"b","x":1}}"#,
    #"{"name":"a","properties":{"k":1},"user":{"alias":{"label":"l","name":"n"}}}"#,
    #"{"name":"a","user":{"alias":{"name":"n","label":"l"}}}"#, #"{"name":"a","user":{ "email" : "a@b.co" }}"#,
    #"{"name":"a","user":{"phone":"\u002b15550100"}}"#, #"{"name":"a","user":{"externalId":""}}"#,
    #"{"name":"a","user":"u1"}"#, #"{"name":"a","user":{"externalId":"u","brazeId":"b"}}"#,
  ]

  static let others = [
    #"{"jsonrpc":"2.0","method":"saveCustomEvent","params":{"name":"a"}}"#,
    #"{"params":{"name":"a"},"method":"saveCustomEvent","id":7,"jsonrpc":"2.0"}"#,
    #"{"jsonrpc":"2.0","id":1,"id":2,"method":"saveCustomEvent","params":{"name":"a"}}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"saveCustomEvent","params":{"name":"a"},"extra":1}"#,
    #"{"jsonrpc":"2.0","id":1,"method":"saveCustomEvent","params":{"name":"a"}} x"#,
    #"{"jsonrpc":"2.0","id":1,"method":"saveCustomEven","params":{"name":"a"}}"#,
    #"[{"jsonrpc":"2.0","id":1,"method":"saveCustomEvent","params":{"name":"a"}}]"#,
  ]

  static var lines: [String] {
    var lines = others
    for id in ids { lines.append(envelope.replacing("ID", with: id).replacing("PARAMS", with: #"{"name":"a"}"#)) }
    for p in params + users { lines.append(envelope.replacing("ID", with: "1").replacing("PARAMS", with: p)) }
    return lines
  }

  /// Replies and stored items of every line, with the fast path on or off, in memory or with a
  /// journal (committed after every line, as the run loop does after a burst).
  static func run(
    fast: Bool, journal: Bool = false, _ configure: (inout Configuration) -> Void = { _ in }
  ) throws -> ([String], [[UInt8]], [UInt8]) {
    let store = Paths.temporaryDirectory()
    let server = InProcessServer {
      configure(&$0)
      if journal {
        $0.memory = false
        $0.storePath = store.path
      }
    }
    if journal { try server.service.openDiskInTests() }
    server.server.fastSaves = fast
    var replies: [String] = []
    for line in lines {
      replies += server.send(line)  // renders, and so commits, after every line
    }
    let held = server.service.store.items
    let items = held.table.rows.filter { !held.table.has(.removed, $0) }.map { row in
      var out: [UInt8] = []
      held.item(row: row).encodeJSON(into: &out)
      return out
    }
    let records = journal ? journalBytes(store) : []
    return (replies, items, records)
  }

  /// Every journal segment's bytes, in name order.
  static func journalBytes(_ store: URL) -> [UInt8] {
    let names = ((try? FileManager.default.contentsOfDirectory(atPath: store.path)) ?? []).filter {
      $0.hasPrefix("segment.")
    }
    return names.sorted().flatMap { (try? [UInt8](Data(contentsOf: store.appendingPathComponent($0)))) ?? [] }
  }

  @Test func fastPathMatchesTheGeneralPath() throws {
    let slow = try Self.run(fast: false)
    let fast = try Self.run(fast: true)
    #expect(fast.0 == slow.0)
    #expect(fast.1 == slow.1)
  }

  @Test func fastPathMatchesTheGeneralPathWithAJournal() throws {
    let slow = try Self.run(fast: false, journal: true)
    let fast = try Self.run(fast: true, journal: true)
    #expect(fast.0 == slow.0)
    #expect(fast.1 == slow.1)
    #expect(!fast.2.isEmpty)
    #expect(fast.2 == slow.2)
  }

  @Test(arguments: [2, 3, 4]) func respectsMaxDepth(depth: Int) throws {
    let configure: (inout Configuration) -> Void = { $0.maxDepth = depth }
    let fast = try Self.run(fast: true, configure)
    let slow = try Self.run(fast: false, configure)
    #expect(fast.0 == slow.0 && fast.1 == slow.1)
  }

  @Test func respectsStoreAndSizeLimits() throws {
    let configure: (inout Configuration) -> Void = {
      $0.store.maxPending = 5
      $0.domain.maxPropertiesBytes = 20
    }
    let fast = try Self.run(fast: true, journal: true, configure)
    let slow = try Self.run(fast: false, journal: true, configure)
    #expect(fast.0 == slow.0 && fast.1 == slow.1 && fast.2 == slow.2)
  }

  @Test func truncationWarningsTakeTheGeneralPath() throws {
    let configure: (inout Configuration) -> Void = { $0.domain.strings = .truncate }
    let fast = try Self.run(fast: true, configure)
    let slow = try Self.run(fast: false, configure)
    #expect(fast.0 == slow.0 && fast.1 == slow.1)
  }

  @Test(arguments: [
    #"{"name":"a"}"#, #"{"name":"a","properties":{"k":[1,"x"]},"user":{"alias":{"name":"n","label":"l"}}}"#,
    #"{"user":{"brazeId":"b"},"name":"a"}"#,
  ])
  func usesTheFastPath(params: String) {
    let server = InProcessServer()
    let line = Self.envelope.replacing("ID", with: "3").replacing("PARAMS", with: params)
    let handled = Array(line.utf8).withUnsafeBufferPointer { server.server.savePath.save($0, server.server) }
    #expect(handled)
    #expect(server.service.store.count == 1)
  }
}
