import Synchronization
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

/// Answers from a script, recording each request body (no network).
final class ScriptedPoster: HTTPPoster {
  let script: Mutex<[Result<HTTPResponse, DeliveryFailure>]>
  let bodies = Mutex<[JSONValue]>([])

  init(_ script: [Result<HTTPResponse, DeliveryFailure>]) { self.script = Mutex(script) }

  func post(_ request: HTTPRequest) -> Result<HTTPResponse, DeliveryFailure> {
    if let body = try? JSONReader.parse(request.body, maxDepth: 64) { bodies.withLock { $0.append(body) } }
    return script.withLock { $0.isEmpty ? .success(HTTPResponse(status: 201)) : $0.removeFirst() }
  }
}

/// The delivery engine in process, against a scripted HTTP client.
@Suite struct DeliveryTests {
  func server(
    _ poster: ScriptedPoster, _ configure: @escaping (inout Configuration) -> Void = { _ in }
  ) -> InProcessServer {
    let server = InProcessServer {
      $0.delivery.endpoint = "https://rest.example.invalid"
      $0.delivery.apiKey = Secret("k")
      $0.delivery.backoffMs = 1
      configure(&$0)
    }
    server.service.poster = poster
    return server
  }

  func save(_ server: InProcessServer, _ n: Int, user: String = "u") throws {
    let reply = try server.request("saveCustomEvent", #"{"name":"e\#(n)","user":{"externalId":"\#(user)"}}"#, id: n)
    #expect(reply.at("result.seq") != nil)
  }

  @Test func aPassAcksDeliveredItemsAndDeadLettersNamedOnes() throws {
    let errors = #"{"message":"success","errors":[{"type":"bad","input_array":"events","index":1}]}"#
    let poster = ScriptedPoster([.success(HTTPResponse(status: 201, body: Array(errors.utf8)))])
    let server = server(poster)
    for n in 0..<3 { try save(server, n) }
    let reply = try server.request("deliverPending")
    #expect(
      reply.at("result")
        == .object([
          JSONMember("delivered", .int(2)), JSONMember("deadLettered", .int(1)), JSONMember("retrying", .int(0)),
          JSONMember("remaining", .int(0)),
        ]))
    #expect(try server.request("listDeadLetters").at("result.deadLetters.0.reason") == .string("bad"))
    #expect(poster.bodies.withLock { $0.count } == 1)
  }

  /// `f1`, `f2`, `f3` of one field: the request sends only `f3`, carrying `f1` and `f2`. Braze refuses
  /// `f3` by name: `f1` and `f2` stay pending (not delivered), and the next request sends `f2`, the
  /// last value Braze can still take (issue 40's end-to-end model: Braze kept a value older than both).
  @Test func aRefusedNewerValueLeavesTheValuesItReplacedPending() throws {
    let errors = #"{"message":"success","errors":[{"type":"bad","input_array":"attributes","index":0}]}"#
    let poster = ScriptedPoster([.success(HTTPResponse(status: 201, body: Array(errors.utf8)))])
    let server = server(poster)
    for n in 1...3 {
      let reply = try server.request(
        "saveUserAttribute", #"{"field":"first_name","value":"f\#(n)","user":{"externalId":"u"}}"#, id: n)
      #expect(reply.at("result.seq") != nil)
    }
    let first = try server.request("deliverPending")
    #expect(first.at("result.deadLettered") == .int(1))
    let bodies = poster.bodies.withLock { $0 }
    #expect(bodies.count == 2, "the refused value's older ones are sent again: \(bodies)")
    #expect(bodies.first?.at("attributes.0.first_name") == .string("f3"))
    #expect(bodies.last?.at("attributes.0.first_name") == .string("f2"))
    #expect(first.at("result.remaining") == .int(0))
  }

  @Test func aFailureKeepsTheItemsAndRaisesTheirDeliveryCount() throws {
    let poster = ScriptedPoster([.failure(.transport("Couldn't connect to server"))])
    let server = server(poster)
    try save(server, 1)
    let reply = try server.request("deliverPending")
    #expect(reply.at("result.retrying") == .int(1))
    #expect(reply.at("result.remaining") == .int(1))
    #expect(try server.request("flushPending").at("result.items.0.deliveryCount") == .int(1))
  }

  @Test func aBadRequestIsSplitDownToTheBadObject() throws {
    let bad: Result<HTTPResponse, DeliveryFailure> = .success(
      HTTPResponse(status: 400, body: Array(#"{"message":"x"}"#.utf8)))
    // 4 items: [1,2,3,4] → 400; [1,2] → 201; [3,4] → 400; [3] → 400 (dead); [4] → 201
    let poster = ScriptedPoster([bad, .success(HTTPResponse(status: 201)), bad, bad])
    let server = server(poster)
    for n in 1...4 { try save(server, n) }
    let reply = try server.request("deliverPending")
    #expect(reply.at("result.delivered") == .int(3))
    #expect(reply.at("result.deadLettered") == .int(1))
    let list = try server.request("listDeadLetters")
    #expect(list.at("result.deadLetters.0.item.name") == .string("e3"))
    #expect(list.at("result.deadLetters.0.reason") == .string("x"))
  }

  @Test func maxCapsTheObjectsOfAPass() throws {
    let poster = ScriptedPoster([])
    let server = server(poster) { $0.trackBatchLimit = 2 }
    for n in 1...5 { try save(server, n, user: "u\(n)") }
    let reply = try server.request("deliverPending", #"{"max":3}"#)
    #expect(reply.at("result.delivered") == .int(3))
    #expect(reply.at("result.remaining") == .int(2))
  }

  @Test func whileRequestsWaitATickStartsOnlyASliceOfSends() throws {
    let server = server(ScriptedPoster([])) { $0.trackBatchLimit = 1 }
    for n in 1...20 { try save(server, n, user: "u\(n)") }
    var settings = server.service.config.delivery
    settings.background = true
    settings.maxInFlight = 64
    let delivery = Deliverer(
      settings: settings, store: server.service.store, clock: .system, log: Log(level: .error), batchLimit: 1,
      mode: .perArray, poster: ScriptedPoster([]))
    delivery.tick(busy: true)  // requests wait: one slice
    #expect(delivery.inFlight == Deliverer.startsPerBusyTick)
    delivery.tick(busy: false)  // idle: everything the limit allows, at once
    #expect(delivery.inFlight + delivery.stats.delivered == 20)
    delivery.finish()
    #expect(delivery.stats.delivered == 20)
  }

  /// The rate limit on a monotonic clock the test holds (`MonotonicClock`): while that clock stands
  /// still nothing more starts, however much real time passes; stepping it to each time
  /// `paceBlockedUntil()` names delivers everything, never more than the rate's count at one instant.
  @Test func theRateLimitRunsOnTheClockItIsGiven() throws {
    let server = server(ScriptedPoster([])) { $0.trackBatchLimit = 1 }
    for n in 1...6 { try save(server, n, user: "u\(n)") }
    var settings = server.service.config.delivery
    settings.background = true
    settings.maxInFlight = 64
    settings.rate = RateLimit(count: 2, seconds: 1)
    let now = HeldClock(100)
    let delivery = Deliverer(
      settings: settings, store: server.service.store, clock: .system, log: Log(level: .error), batchLimit: 1,
      mode: .perArray, poster: ScriptedPoster([]), monotonic: now.clock)
    var steps = 0
    while delivery.stats.delivered < 6 && steps < 40 {
      steps += 1
      delivery.tick()
      #expect(delivery.inFlight <= 2, "at most the rate's count starts at one instant")
      delivery.finish(seconds: 10)  // the answers, at the held time
      guard delivery.stats.delivered < 6 else { break }
      let until = try #require(delivery.paceBlockedUntil(), "the limiter holds the next start")
      #expect(until > now.seconds)
      now.set(until - 0.001)
      delivery.tick()
      #expect(delivery.inFlight == 0, "nothing starts before the given clock reaches \(until)")
      now.set(until + 0.001)
    }
    #expect(delivery.stats.delivered == 6)
    #expect(steps >= 3)  // six requests at two per window: at least three steps of the clock
  }

  @Test func withoutAnEndpointDeliverPendingIsAnError() throws {
    let reply = try InProcessServer().request("deliverPending")
    #expect(reply.at("error.code") == .int(-32010))
    #expect(try InProcessServer().request("status").at("result.delivery") == .null)
  }

  @Test func endpointsAndRates() throws {
    #expect(try DeliverySettings.endpoint("https://rest.iad-01.braze.com/") == "https://rest.iad-01.braze.com")
    #expect(try DeliverySettings.endpoint("http://127.0.0.1:8080") == "http://127.0.0.1:8080")
    #expect(try DeliverySettings.endpoint("http://[::1]:9/") == "http://[::1]:9")
    for bad in ["http://example.com", "http://127.0.0.1.evil.com", "ftp://x", "https://a b", ""] {
      #expect(throws: SettingError.self) { try DeliverySettings.endpoint(bad) }
    }
    // Hostile forms (issue 17): userinfo, other numeric spellings, query/fragment tricks, a trailing
    // dot, percent-encoding and non-ASCII (IDNA) names; none may pass as loopback or at all.
    let hostile = [
      "http://127.0.0.1:80@evil.example", "http://127.0.0.1:1@localhost:9", "https://user:pw@rest.braze.com",
      "http://0x7f000001", "http://127.1", "http://[::ffff:127.0.0.1]", "http://127.0.0.1#@evil.example",
      "http://127.0.0.1?@evil.example", "http://localhost.", "https://rest.braze.com.", "http://%6c%6fcalhost",
      "https://rest.bräze.com", "http://127.000.0.1", "http://127.0.0.1:0", "http://127.0.0.1:65536",
      "https://a..b", "https://-a.com", "http://[::1", "http://127.0.0.1\\@evil.example",
    ]
    for bad in hostile {
      #expect(throws: SettingError.self, "\(bad)") { try DeliverySettings.endpoint(bad) }
    }
    #expect(try DeliverySettings.endpoint("HTTP://LocalHost:9/") == "http://localhost:9")
    #expect(try DeliverySettings.endpoint("https://xn--brze-loa.com/v1/") == "https://xn--brze-loa.com/v1")
    #expect(try RateLimit("1000/3") == RateLimit(count: 1000, seconds: 3))
    for bad in ["0/1", "5", "5/0", "x/1", "5/-1", "5/inf"] {
      #expect(throws: SettingError.self) { try RateLimit(bad) }
    }
  }

  @Test func rateLimitHeaders() {
    #expect(Verdict.waitMs(["retry-after": "2"], nowMs: 0) == 2000)
    #expect(Verdict.waitMs(["x-ratelimit-reset": "10"], nowMs: 4000) == 6000)
    #expect(Verdict.waitMs(["retry-after": "soon"], nowMs: 0) == nil)
    #expect(Verdict.waitMs([:], nowMs: 0) == nil)
  }

  @Test func theKeyIsRedactedWhenPrinted() {
    let key = Secret("very-secret")
    #expect("\(key)" == "<redacted>")
    #expect(String(reflecting: key) == "<redacted>")
  }

  @Test func theLimiterNeverLetsBrazeSeeMoreThanItsCountPerWindow() {
    // Requests travel for up to 0.3 s and reach the server anywhere on the way: counted on arrival,
    // as Braze counts them, no window of 1 s may hold more than 3.
    var pacing = Pacing(RateLimit(count: 3, seconds: 1))
    var generator = SystemRandomNumberGenerator()
    var inFlight: [(token: Int, answeredAt: Double)] = []
    var arrivals: [Double] = []
    var now = 0.0
    while arrivals.count < 40 {
      for flight in inFlight where flight.answeredAt <= now { pacing.answered(flight.token, at: flight.answeredAt) }
      inFlight.removeAll { $0.answeredAt <= now }
      if pacing.blockedUntil(now) == nil {
        let travel = Double.random(in: 0...0.3, using: &generator)
        inFlight.append((pacing.record(now), now + travel))
        arrivals.append(now + travel * Double.random(in: 0...1, using: &generator))
      }
      now += 0.01
    }
    arrivals.sort()
    for (n, arrival) in arrivals.enumerated() where n + 3 < arrivals.count {
      #expect(arrivals[n + 3] - arrival >= 1)
    }
  }

  @Test func theLimiterSpreadsStartsAfterABurstOfATenth() {
    // 500/1: 50 starts at once, then one per 2 ms, while no window holds 500 (answers come at once).
    var pacing = Pacing(RateLimit(count: 500, seconds: 1))
    var starts: [Double] = []
    var now = 0.0
    while starts.count < 200 {
      if let until = pacing.blockedUntil(now) {
        now = max(now + 0.0001, until)
        continue
      }
      starts.append(now)
      pacing.answered(pacing.record(now), at: now)
    }
    #expect(starts.prefix(50).allSatisfy { $0 == 0 }, "the burst: a tenth of the limit at once")
    for (earlier, later) in zip(starts[50...], starts[51...]) {
      #expect(later - earlier >= 0.002 - 1e-9, "starts \(earlier) and \(later) closer than 1 s / 500")
    }
    #expect(starts[199] < 0.002 * 151 + 1e-6, "no slower than the pace")
  }

  @Test func theUserKeyReadFromTheBodyEqualsTheParsedOne() throws {
    let server = InProcessServer()
    let user = #"{"alias":{"name":"a}b\"{[","label":"l"}}"#
    _ = try server.request("saveCustomEvent", #"{"name":"e","user":\#(user)}"#)
    let items = server.service.store.items
    let row = try #require(items.table.row(of: 1))
    let fast = items.withBody(row: row) { body in
      UserKey.of(body: body) {
        Issue.record("the fast path must apply"); return items.item(row: row)
      }
    }
    var bytes: [UInt8] = []
    items.item(row: row).user?.json.encodeJSON(into: &bytes)
    #expect(fast == bytes)
    let slow = [UInt8](#","name":"e","user":{"externalId":"x"}"#.utf8).withUnsafeBytes { body in
      UserKey.of(body: body) { items.item(row: row) }
    }
    #expect(slow == fast)  // another layout falls back to parsing, with the same key
  }

  @Test func theUserKeyOfARowEqualsTheOneReadFromItsBody() throws {
    // Seeded saves of many users (some sharing one, some with none): the key
    // read from the record's interned user member is the one read from the body put back together.
    var random = SeededGenerator(seed: 41)
    let server = InProcessServer()
    let users: [(UInt64) -> String] = [
      { #"{"externalId":"u-\#($0)"}"# }, { #"{"brazeId":"b\#($0)"}"# },
      { #"{"alias":{"name":"a}b\"{[\#($0)","label":"l"}}"# }, { #"{"email":"e\#($0)@example.com"}"# },
    ]
    for n in 1...300 {
      let user = users[Int(random.next() % UInt64(users.count))](random.next() % 40)
      let params =
        n % 7 == 0 ? #"{"name":"e\#(n)"}"# : #"{"name":"e\#(n % 5)","properties":{"n":\#(n)},"user":\#(user)}"#
      _ = try server.request("saveCustomEvent", params)
    }
    let items = server.service.store.items
    var keyed = 0
    for seq in UInt64(1)...300 {
      let row = try #require(items.table.row(of: seq))
      let fromBody = items.withBody(row: row) { UserKey.of(body: $0) { items.item(row: row) } }
      #expect(UserKey.of(row: row, in: items) == fromBody, "seq \(seq)")
      if fromBody != nil { keyed += 1 }
    }
    #expect(keyed > 200)
  }

  @Test func usersAreNumberedByBytesNotByCanonicalEquivalence() {
    var users = UserNumbers()
    let composed = users.number(for: Array(#"{"externalId":"\#u{00C5}"}"#.utf8))
    let decomposed = users.number(for: Array(#"{"externalId":"A\#u{030A}"}"#.utf8))
    #expect(composed != decomposed)
    #expect(users.number(for: Array(#"{"externalId":"\#u{00C5}"}"#.utf8)) == composed)
    #expect(users.count == 2)
  }
}
