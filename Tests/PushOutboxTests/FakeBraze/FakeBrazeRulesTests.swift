import Testing

@testable import OutboxDomain
@testable import OutboxFakeBraze
@testable import OutboxJSON
@testable import OutboxServer

/// The fake's rules (`FakeBrazeRules`, its own table, no code shared) against the outbox's own
/// (`OutboxDomain`'s limits and the service's defaults), limit by limit: the two tables agree on each
/// value, and at each limit both sides accept N and refuse N + 1, each by its own code.
@Suite struct FakeBrazeRulesTests {
  struct Row: Sendable, CustomTestStringConvertible {
    var name: String
    /// The outbox's value of the same limit (nil: the outbox has no such rule, e.g. purchases).
    var outbox: Int?
    /// The documented value (Braze's docs, as domain research recorded them in the code's comments).
    var documented: Int
    var testDescription: String { name }
  }

  static let rows: [Row] = [
    Row(name: "objects per array", outbox: Configuration().trackBatchLimit, documented: 75),
    Row(name: "characters in a name, key or string value", outbox: TextLimit.maxCharacters, documented: 255),
    Row(name: "bytes of event properties", outbox: DomainLimits().maxPropertiesBytes, documented: 51_200),
    Row(name: "purchase quantity", outbox: nil, documented: 100),
  ]

  @Test func everyLimitOfTheFakeHasARow() {
    #expect(Set(FakeBrazeRules.limits.map(\.name)) == Set(Self.rows.map(\.name)))
  }

  @Test(arguments: rows) func theTablesAgree(row: Row) {
    let fake = FakeBrazeRules.limit(row.name)
    #expect(fake == row.documented, "the fake's \(row.name)")
    if let outbox = row.outbox { #expect(outbox == row.documented, "the outbox's \(row.name)") }
  }

  @Test(arguments: rows) func theFakeAcceptsTheLimitAndRefusesOneMore(row: Row) throws {
    let n = FakeBrazeRules.limit(row.name)
    #expect(try fakeAccepts(row.name, n), "\(row.name) at \(n)")
    #expect(try !fakeAccepts(row.name, n + 1), "\(row.name) at \(n + 1)")
  }

  @Test(arguments: rows.filter { $0.outbox != nil }) func theOutboxAcceptsTheLimitAndRefusesOneMore(row: Row) throws {
    let n = row.documented
    #expect(try outboxAccepts(row.name, n), "\(row.name) at \(n)")
    #expect(try !outboxAccepts(row.name, n + 1), "\(row.name) at \(n + 1)")
  }

  // MARK: - probes

  static let time = #""2026-01-01T00:00:00Z""#

  /// `{…}` whose compact JSON is exactly `bytes` long, of keys and values short enough for any rule.
  static func properties(bytes: Int) -> String {
    var entries: [String] = []
    var size = 2
    while true {
      let overhead = 10 + (entries.isEmpty ? 0 : 1)  // "k1000":"" and a comma
      let left = bytes - size - overhead
      guard left >= 0 else { break }
      let value = left > 250 ? 200 : left
      entries.append("\"k\(1000 + entries.count)\":\"" + String(repeating: "v", count: value) + "\"")
      size += overhead + value
      if value == left { break }
    }
    return "{" + entries.joined(separator: ",") + "}"
  }

  func fakeAccepts(_ limit: String, _ n: Int) throws -> Bool {
    let body: String
    switch limit {
    case "objects per array":
      let one = #"{"external_id":"u","name":"e","time":\#(Self.time)}"#
      body = #"{"events":["# + Array(repeating: one, count: n).joined(separator: ",") + "]}"
    case "characters in a name, key or string value":
      body =
        #"{"events":[{"external_id":"u","name":""# + String(repeating: "é", count: n) + #"","time":\#(Self.time)}]}"#
    case "bytes of event properties":
      body =
        #"{"events":[{"external_id":"u","name":"e","time":\#(Self.time),"properties":"# + Self.properties(bytes: n)
        + "}]}"
    default:
      body =
        #"{"purchases":[{"external_id":"u","product_id":"p","currency":"EUR","price":1,"quantity":\#(n),"time":\#(Self.time)}]}"#
    }
    switch FakeBrazeRules.check(try JSONReader.parse(body), maxObjects: 75, combined: false) {
    case .fatal: return false
    case .checked(let errors, _): return errors.isEmpty
    }
  }

  func outboxAccepts(_ limit: String, _ n: Int) throws -> Bool {
    let server = InProcessServer()
    switch limit {
    case "objects per array":
      // The outbox's side of this limit is what it sends: N events fit in one request, N + 1 do not.
      for k in 0..<n {
        _ = try server.request("saveCustomEvent", #"{"name":"e\#(k)","user":{"externalId":"u"}}"#, id: k + 1)
      }
      let flushed = try server.request("flushPending", #"{"format":"usersTrack"}"#, id: n + 1)
      return flushed.at("result.requests")?.arrayValue?.count == 1
    case "characters in a name, key or string value":
      let reply = try server.request("saveCustomEvent", #"{"name":""# + String(repeating: "é", count: n) + #""}"#)
      return reply["result"] != nil
    default:
      let reply = try server.request("saveCustomEvent", #"{"name":"e","properties":"# + Self.properties(bytes: n) + "}")
      return reply["result"] != nil
    }
  }

  @Test func thePropertiesProbeHasTheSizeAsked() throws {
    for n in [2, 13, 400, 51_200, 51_201] {
      let text = Self.properties(bytes: n)
      #expect(text.utf8.count == n, "\(n)")
      #expect(try JSONReader.parse(text).jsonBytes.count == n)
    }
  }
}
