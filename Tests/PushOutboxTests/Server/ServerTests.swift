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

@Suite struct ServerTests {
  /// `Server` only dispatches (issue 43): its stored state is the service, the method table, the
  /// burst, the batch flag, the MCP session and the save path, each of which owns its own state.
  @Test func theServerHoldsOnlyWhatDispatchNeeds() {
    let server = InProcessServer().server
    let stored = Mirror(reflecting: server).children.compactMap(\.label)
    #expect(stored == ["service", "table", "burst", "inBatch", "mcp", "savePath"])
  }

  @Test(arguments: [
    (#"{"jsonrpc":"2.0","id":1,"method":"status","params":5}"#, -32600),
    (#"{"jsonrpc":"2.0","id":1,"method":"status","params":"x"}"#, -32600),
    (#"{"jsonrpc":"1.0","id":1,"method":"status"}"#, -32600),
    (#"{"id":1,"method":"status"}"#, -32600),
    (#"{"jsonrpc":"2.0","id":1,"method":5}"#, -32600),
    (#"{"jsonrpc":"2.0","id":true,"method":"status"}"#, -32600),
    (#"{"jsonrpc":"2.0","id":[1],"method":"status"}"#, -32600),
    (#"{"jsonrpc":"2.0","id":1,"id":2,"method":"status"}"#, -32600),
    (#"{"jsonrpc":"2.0","id":1,"method":"Status"}"#, -32601),
    (#"{"jsonrpc":"2.0","id":1,"method":""}"#, -32601),
    (#"{"jsonrpc":"2.0","id":1,"method":"rpc.nope"}"#, -32601),
    (#"{"jsonrpc":"2.0","id":1,"method":"status","params":[]}"#, -32602),
    (#"{"jsonrpc":"2.0","id":1,"method":"status","params":{"x":1}}"#, -32602),
    (#"{"jsonrpc":"2.0","id":1,"method":"saveCustomEvent","params":{"name":"a","name":"b"}}"#, -32602),
    (#"{"jsonrpc":"2.0","id":1,"method":"status""#, -32700),
    (#"[1,2"#, -32700),
    ("\"\\ud800\"", -32700),
    (#"1"#, -32600),
  ])
  func answersWithTheRightCode(line: String, code: Int64) throws {
    let reply = try InProcessServer().call(line)
    #expect(reply.at("error.code") == .int(code), "\(line)")
    #expect(reply["jsonrpc"] == .string("2.0"))
    #expect(reply["result"] == nil)
  }

  @Test(arguments: [
    ("1", "1"), ("\"abc\"", "\"abc\""), ("null", "null"), ("1.5", "1.5"),
    ("18446744073709551616", "18446744073709551616"), ("9007199254740993", "9007199254740993"), ("-0", "-0"),
  ])
  func echoesIdsExactly(id: String, expected: String) {
    let replies = InProcessServer().send(#"{"jsonrpc":"2.0","id":\#(id),"method":"status"}"#)
    #expect(replies.count == 1)
    #expect(replies[0].hasPrefix(#"{"jsonrpc":"2.0","id":\#(expected),"result":"#))
  }

  @Test func notificationsAreNeverAnswered() {
    let server = InProcessServer()
    let replies = server.send(
      #"{"jsonrpc":"2.0","method":"status"}"#,
      #"{"jsonrpc":"2.0","method":"nope"}"#,
      #"{"jsonrpc":"2.0","method":"saveCustomEvent","params":{"bad":1}}"#,
      #"{"jsonrpc":"2.0","method":"saveCustomEvent","params":{"name":"saved"}}"#,
      #"[{"jsonrpc":"2.0","method":"status"},{"jsonrpc":"2.0","method":"status"}]"#)
    #expect(replies.isEmpty)
    #expect(server.service.store.count == 1)
  }

  @Test func batchesKeepOrderAndAnswerInvalidMembersInPlace() throws {
    let replies = InProcessServer().send(
      #"[{"jsonrpc":"2.0","id":1,"method":"status"},{"jsonrpc":"2.0","method":"status"},1,{"foo":"boo"},{"jsonrpc":"2.0","id":"x","method":"nope"},[],{"jsonrpc":"2.0","id":1,"method":"status"}]"#
    )
    #expect(replies.count == 1)
    let batch = try JSONReader.parse(replies[0]).arrayValue ?? []
    #expect(batch.count == 6)
    #expect(batch.map { $0["id"] } == [.int(1), .null, .null, .string("x"), .null, .int(1)])
    #expect(batch.map { $0.at("error.code") } == [nil, .int(-32600), .int(-32600), .int(-32601), .int(-32600), nil])
  }

  @Test func emptyBatchIsOneErrorObject() throws {
    let reply = try InProcessServer().call("[]")
    #expect(reply.at("error.code") == .int(-32600))
    #expect(reply["id"] == .null)
  }

  @Test func batchOverTheCapRunsNothing() throws {
    let server = InProcessServer { $0.maxBatch = 2 }
    let save = #"{"jsonrpc":"2.0","id":1,"method":"saveCustomEvent","params":{"name":"a"}}"#
    let reply = try server.call("[\(save),\(save),\(save)]")
    #expect(reply.at("error.code") == .int(-32600))
    #expect(server.service.store.count == 0)
  }

  @Test func responseObjectsAreIgnored() {
    #expect(InProcessServer().send(#"{"jsonrpc":"2.0","id":1,"result":{}}"#).isEmpty)
  }

  @Test func invalidParamsListEveryProblem() throws {
    let reply = try InProcessServer().request("flushPending", #"{"max":0,"format":"xml","leaseMs":"soon","extra":1}"#)
    let codes = reply.at("error.data.errors")?.arrayValue?.compactMap { $0["code"]?.stringValue } ?? []
    #expect(codes.sorted() == ["invalid_value", "out_of_range", "unknown_param", "wrong_type"])
  }

  @Test func integersAndBooleansKeepTheirTypesThroughAFlush() throws {
    let server = InProcessServer()
    _ = try server.request("saveCustomEvent", #"{"name":"e","properties":{"one":1,"yes":true,"half":0.5,"float":1.0}}"#)
    let flushed = try server.request("flushPending")
    let properties = flushed.at("result.items.0.properties")
    #expect(
      properties
        == .object([
          JSONMember("one", .int(1)), JSONMember("yes", .bool(true)), JSONMember("half", .number("0.5")),
          JSONMember("float", .number("1.0")),
        ]))
  }

  @Test func savesAnswerIdSeqAndPending() throws {
    let server = InProcessServer()
    let first = try server.request("saveCustomEvent", #"{"name":"a"}"#)
    let second = try server.request("saveUserAttribute", #"{"field":"first_name","value":"Ann"}"#, id: 2)
    #expect(first.at("result.seq") == .int(1) && second.at("result.seq") == .int(2))
    #expect(second.at("result.pending") == .int(2))
    #expect(first.at("result.id") != second.at("result.id"))
  }

  @Test func drainRemovesExactlyTheReturnedItems() throws {
    let server = InProcessServer()
    for n in 1...5 { _ = try server.request("saveCustomEvent", #"{"name":"e\#(n)"}"#, id: n) }
    let flushed = try server.request("flushPending", #"{"max":2}"#)
    #expect(flushed.at("result.items")?.arrayValue?.map { $0["seq"] } == [.int(1), .int(2)])
    #expect(flushed.at("result.remaining") == .int(3))
    let rest = try server.request("flushPending")
    #expect(rest.at("result.items")?.arrayValue?.map { $0["seq"] } == [.int(3), .int(4), .int(5)])
  }
}

/// A batch over `--max-batch` is refused while it is read: the rest of the line is never parsed.
@Suite struct BatchLimitTests {
  @Test func theReaderStopsAtTheFirstMemberOverTheLimit() throws {
    let server = InProcessServer { $0.maxBatch = 2 }
    let member = #"{"jsonrpc":"2.0","id":1,"method":"status"}"#
    let reply = try server.call("[\(member),\(member),\(member), this is not JSON")
    #expect(reply.at("error.code") == .int(-32600))
    let ok = try server.call("[\(member),\(member)]")
    #expect(ok.arrayValue?.count == 2)
  }
}
