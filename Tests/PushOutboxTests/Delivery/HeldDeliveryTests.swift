import Synchronization
import Testing

@testable import OutboxDelivery
@testable import OutboxJSON
@testable import OutboxStore
@testable import OutboxSupport

/// `HeldDelivery` (the fleet deliverer's engine) against a scripted HTTP client: per-user exclusion,
/// the 400 split, and users waiting for what they gave back.
@Suite struct HeldDeliveryTests {
  func engine(_ poster: ScriptedPoster, batchLimit: Int, inFlight: Int = 4) -> HeldDelivery {
    var settings = DeliverySettings()
    settings.endpoint = "https://rest.example.invalid"
    settings.apiKey = Secret("k")
    settings.backoffMs = 1
    settings.maxInFlight = inFlight
    return HeldDelivery(
      settings: settings, clock: .system, log: Log(level: .error), batchLimit: batchLimit, poster: poster)
  }

  func item(_ seq: UInt64, user: String) -> PendingItem {
    let body = #","user":{"externalId":"\#(user)"},"name":"e\#(seq)","time":"2026-01-01T00:00:00.000Z","properties":{}"#
    return PendingItem(
      seq: seq, id: ItemID(client: Array("id\(seq)".utf8)), kind: .customEvent, savedAt: 0, hasUser: true,
      body: Array(body.utf8))
  }

  /// Runs requests until every held item is settled; the outcomes in order.
  func drain(_ engine: HeldDelivery) -> [HeldDelivery.Outcome] {
    var out: [HeldDelivery.Outcome] = []
    while engine.heldCount > 0 {
      engine.startRequests(sendBy: .infinity)
      engine.waitForAnswer(seconds: 0.05)
      out += engine.collect()
    }
    return out
  }

  /// The fleet's side of `DeliveryTests.aRefusedNewerValueLeavesTheValuesItReplacedPending`: `f1` and
  /// `f2` are carried by the request that sends `f3`; Braze refuses `f3`; `f2` goes next, `f1` with it.
  @Test func aRefusedNewerValueKeepsTheValuesItReplacedHeld() {
    let errors = #"{"message":"success","errors":[{"type":"bad","input_array":"attributes","index":0}]}"#
    let poster = ScriptedPoster([.success(HTTPResponse(status: 201, body: Array(errors.utf8)))])
    let engine = engine(poster, batchLimit: 75, inFlight: 1)
    for n in 1...3 {
      let body = #","user":{"externalId":"u"},"field":"first_name","value":"f\#(n)""#
      engine.add(
        PendingItem(
          seq: UInt64(n), id: ItemID(client: Array("id\(n)".utf8)), kind: .userAttribute, savedAt: 0, hasUser: true,
          body: Array(body.utf8)))
    }
    let outcomes = drain(engine)
    let sent = poster.bodies.withLock { $0.compactMap { $0.at("attributes.0.first_name")?.stringValue } }
    #expect(sent == ["f3", "f2"])
    var delivered: [UInt64] = []
    var dead: [UInt64] = []
    for case .settled(let done, let refused) in outcomes {
      delivered += done.map(\.seq)
      dead += refused.map(\.0.seq)
    }
    #expect(dead == [3])
    #expect(delivered.sorted() == [1, 2])
  }

  @Test func neverTwoRequestsForOneUser() {
    let poster = ScriptedPoster([])
    let engine = engine(poster, batchLimit: 1)
    for (seq, user) in [(1, "u"), (2, "u"), (3, "v"), (4, "w")] { engine.add(item(UInt64(seq), user: user)) }
    engine.startRequests(sendBy: .infinity)
    #expect(engine.inFlight == 3)  // u's second item waits for its first
    _ = drain(engine)
    let names = poster.bodies.withLock { $0.compactMap { $0["events"]?.arrayValue?.first?["name"]?.stringValue } }
    #expect(names.firstIndex(of: "e1")! < names.firstIndex(of: "e2")!)
  }

  @Test func aBadRequestIsSplitDownToTheBadObject() {
    let bad: Result<HTTPResponse, DeliveryFailure> = .success(
      HTTPResponse(status: 400, body: Array(#"{"message":"x"}"#.utf8)))
    // [1,2,3,4] → 400; [1,2] → 201; [3,4] → 400; [3] → 400 (dead); [4] → 201
    let poster = ScriptedPoster([bad, .success(HTTPResponse(status: 201)), bad, bad])
    let engine = engine(poster, batchLimit: 75, inFlight: 1)
    for seq in 1...4 { engine.add(item(UInt64(seq), user: "u\(seq)")) }
    var delivered: [UInt64] = []
    var dead: [UInt64] = []
    for outcome in drain(engine) {
      if case .settled(let done, let refused) = outcome {
        delivered += done.map(\.seq)
        dead += refused.map(\.0.seq)
      }
    }
    #expect(delivered.sorted() == [1, 2, 4])
    #expect(dead == [3])
  }

  @Test func aUserWaitsForEveryItemItGaveBack() {
    let poster = ScriptedPoster([])
    let engine = engine(poster, batchLimit: 75)
    for seq in [5, 7] { engine.add(item(UInt64(seq), user: "u")) }
    let given = engine.takeWaiting(untilMs: Clock.system.now() + 60_000)
    #expect(given.map(\.seq) == [5, 7])
    engine.add(item(5, user: "u"))  // the oldest comes back
    engine.add(item(9, user: "u"))  // a newer one, before 7
    engine.startRequests(sendBy: .infinity)
    engine.waitForAnswer(seconds: 1)
    _ = engine.collect()
    let sent = poster.bodies.withLock { $0.flatMap { $0["events"]?.arrayValue ?? [] } }.compactMap {
      $0["name"]?.stringValue
    }
    #expect(sent == ["e5"])  // 9 waits for 7
    engine.add(item(7, user: "u"))
    _ = drain(engine)
    let all = poster.bodies.withLock { $0.flatMap { $0["events"]?.arrayValue ?? [] } }.compactMap {
      $0["name"]?.stringValue
    }
    #expect(all == ["e5", "e7", "e9"])
  }
}
