import Testing

@testable import PushOutbox

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
    #"{"name":"a","properties":{"x":["2026-01-02T03:04:05Z"]}}"#, #"{"name":"a","properties":{"x":"2026-01-02T03:04:05Z"}}"#,
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
    for p in params { lines.append(envelope.replacing("ID", with: "1").replacing("PARAMS", with: p)) }
    return lines
  }

  /// Replies and stored items of every line, with the fast path on or off.
  static func run(fast: Bool, _ configure: (inout Configuration) -> Void = { _ in }) -> ([String], [[UInt8]]) {
    let server = InProcessServer(configure)
    server.server.fastSaves = fast
    let replies = lines.flatMap { server.send($0) }
    let items = server.service.store.held.map { item in
      var out: [UInt8] = []
      item.encodeJSON(into: &out)
      return out
    }
    return (replies, items)
  }

  @Test func fastPathMatchesTheGeneralPath() {
    let (slowReplies, slowItems) = Self.run(fast: false)
    let (fastReplies, fastItems) = Self.run(fast: true)
    #expect(fastReplies == slowReplies)
    #expect(fastItems == slowItems)
  }

  @Test(arguments: [2, 3, 4]) func respectsMaxDepth(depth: Int) {
    let configure: (inout Configuration) -> Void = { $0.maxDepth = depth }
    #expect(Self.run(fast: true, configure) == Self.run(fast: false, configure))
  }

  @Test func respectsStoreAndSizeLimits() {
    let configure: (inout Configuration) -> Void = {
      $0.store.maxPending = 5
      $0.domain.maxPropertiesBytes = 20
    }
    #expect(Self.run(fast: true, configure) == Self.run(fast: false, configure))
  }

  @Test func usesTheFastPath() {
    let server = InProcessServer()
    let line = Self.envelope.replacing("ID", with: "3").replacing("PARAMS", with: #"{"name":"a"}"#)
    let handled = Array(line.utf8).withUnsafeBufferPointer { server.server.handleFastSave($0) }
    #expect(handled)
    #expect(server.service.store.count == 1)
  }
}
