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

/// Every integer from the wire fits or is refused with `-32602` naming the allowed range; nothing traps.
@Suite struct WireIntegerTests {
  func firstIssue(_ reply: JSONValue) -> JSONValue? { reply.at("error.data.errors.0") }

  @Test(arguments: [
    ("leaseMs", "9223372036854775807", Int64(3_155_760_000_000)), ("leaseMs", "0", 3_155_760_000_000),
    ("leaseMs", "-9223372036854775808", 3_155_760_000_000), ("leaseMs", "99999999999999999999", 3_155_760_000_000),
    ("max", "2147483648", Int64(Int32.max)), ("max", "9223372036854775808", Int64(Int32.max)),
    ("max", "0", Int64(Int32.max)),
  ])
  func flushIntegersOutOfRangeNameTheRange(key: String, value: String, max: Int64) throws {
    let server = InProcessServer()
    #expect(try server.request("saveCustomEvent", #"{"name":"e"}"#)["result"] != nil)
    let reply = try server.request("flushPending", #"{"\#(key)":\#(value)}"#)
    let issue = try #require(firstIssue(reply), "\(reply)")
    #expect(reply.at("error.code") == .int(-32602))
    #expect(issue["code"] == .string("out_of_range"))
    #expect(issue["path"] == .string(key))
    #expect(issue["min"] == .int(1))
    #expect(issue["max"] == .int(max))
    // The server is still there, with the item pending.
    #expect(try server.request("status").at("result.pending.total") == .int(1))
  }

  @Test func theLongestLeaseWorks() throws {
    let server = InProcessServer()
    #expect(try server.request("saveCustomEvent", #"{"name":"e"}"#)["result"] != nil)
    let reply = try server.request("flushPending", #"{"leaseMs":3155760000000,"max":2147483647}"#)
    #expect(reply.at("result.leaseExpiresAt") == .string("2126-01-02T00:00:00.000Z"))
  }

  @Test(arguments: ["1.5", "1e3", "\"1\""])
  func nonIntegersAreWrongType(value: String) throws {
    let reply = try InProcessServer().request("flushPending", #"{"leaseMs":\#(value)}"#)
    #expect(firstIssue(reply)?["code"] == .string("wrong_type"))
  }

  @Test(arguments: [
    "9999-12-31T23:00:00-05:00", "0000-01-01T00:00:00+01:00", "9999-12-31T23:59:59.999-00:01",
  ])
  func timesOutsideYears0000To9999AreRefused(time: String) throws {
    let reply = try InProcessServer().request("saveCustomEvent", #"{"name":"e","time":"\#(time)"}"#)
    #expect(firstIssue(reply)?["code"] == .string("invalid_time"), "\(reply)")
  }

  @Test(arguments: ["9999-12-31T23:59:59.999Z", "0000-01-01T00:00:00Z", "9999-12-31T18:59:59.999-05:00"])
  func timesAtTheEdgesAreKept(time: String) throws {
    let server = InProcessServer()
    #expect(try server.request("saveCustomEvent", #"{"name":"e","time":"\#(time)"}"#)["result"] != nil)
    let stored = try server.request("flushPending").at("result.items.0.time")?.stringValue
    #expect(stored.flatMap(ISO8601.parseDateTime) == ISO8601.parseDateTime(time))
  }

  @Test func incAmountsAreInt64OrRefused() throws {
    let server = InProcessServer()
    let big = try server.request("saveCustomAttribute", #"{"key":"n","op":"inc","value":9223372036854775807}"#)
    #expect(big["result"] != nil)
    let tooBig = try server.request("saveCustomAttribute", #"{"key":"n","op":"inc","value":9223372036854775808}"#)
    let issue = firstIssue(tooBig)
    #expect(issue?["code"] == .string("out_of_range"))
    #expect(issue?["max"] == .int(.max))
  }
}
