import Dispatch
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

/// Answers 201 to every request, but only once the test opens the gate.
final class GatedPoster: HTTPPoster {
  private let gate = DispatchSemaphore(value: 0)
  let posts = Atomic<Int>(0)

  func post(_ request: HTTPRequest) -> Result<HTTPResponse, DeliveryFailure> {
    posts.add(1, ordering: .relaxed)
    gate.wait()
    gate.signal()  // once open, it stays open
    return .success(HTTPResponse(status: 201))
  }

  func open() { gate.signal() }
}

/// The long-call mechanism (`LongCalls`) in the real loop over a memory transport: a pass runs
/// between requests, is cancelled by id, and still gives one reply per request.
@Suite struct LongCallTests {
  func server(_ poster: GatedPoster) throws -> InProcessServer {
    let server = InProcessServer {
      $0.delivery.endpoint = "https://rest.example.invalid"
      $0.delivery.apiKey = Secret("k")
    }
    server.service.poster = poster
    for n in 0..<3 {
      let reply = try server.request("saveCustomEvent", #"{"name":"e\#(n)","user":{"externalId":"u"}}"#, id: 100 + n)
      #expect(reply.at("result.seq") != nil)
    }
    return server
  }

  func ids(_ lines: [String]) throws -> [JSONValue] {
    try lines.map { try JSONReader.parse($0)["id"] ?? .string("none") }
  }

  /// A turn that starts a request waits for its answer, not the timeout computed before the turn's
  /// work: with an item pending and nothing in flight that was 1,000 ms ("look again soon"), so a
  /// serving `--deliver` slept through the answers of every request it had just started (issue 41:
  /// delivery while saving stalled about a second after each rate window).
  @Test func aTurnThatStartsARequestWaitsForItsAnswer() throws {
    let poster = GatedPoster()
    let server = InProcessServer {
      $0.delivery.endpoint = "https://rest.example.invalid"
      $0.delivery.apiKey = Secret("k")
      $0.delivery.background = true
    }
    server.service.poster = poster
    defer { poster.open() }
    let reply = try server.request("saveCustomEvent", #"{"name":"e","user":{"externalId":"u"}}"#)
    #expect(reply.at("result.seq") != nil)
    for _ in 0..<20_000 where server.service.delivery?.inFlight ?? 0 == 0 { _ = server.turn() }
    #expect(server.service.delivery?.inFlight == 1)
    let wait = try #require(server.lastTimeoutMs)
    #expect(wait >= 0 && wait <= 5, "the loop would sleep \(wait) ms with a request in flight")
  }

  /// Turns the loop until a line comes; fails after many turns (a hang guard, not a timing claim).
  func next(_ server: InProcessServer) throws -> [String] {
    for _ in 0..<20_000 {
      let lines = server.turn()
      if !lines.isEmpty { return lines }
    }
    throw TestFailure("no line came")
  }

  @Test func laterRequestsAreAnsweredWhileAPassWaits() throws {
    let poster = GatedPoster()
    let server = try server(poster)
    let first = server.sendWithoutWaiting([
      #"{"jsonrpc":"2.0","id":1,"method":"deliverPending"}"#, #"{"jsonrpc":"2.0","id":2,"method":"status"}"#,
      #"{"jsonrpc":"2.0","id":3,"method":"saveCustomEvent","params":{"name":"x"}}"#,
    ])
    #expect(try ids(first) == [.int(2), .int(3)])
    #expect(server.service.longCalls.awaitingReply == 1)
    poster.open()
    let last = try next(server)
    #expect(try ids(last) == [.int(1)])
    #expect(try JSONReader.parse(last[0]).at("result.delivered") == .int(3))
  }

  @Test func aCancelAnswersAtOnceAndTheRequestInFlightIsStillApplied() throws {
    let poster = GatedPoster()
    let server = try server(poster)
    #expect(server.sendWithoutWaiting([#"{"jsonrpc":"2.0","id":"p","method":"deliverPending"}"#]).isEmpty)
    while poster.posts.load(ordering: .relaxed) == 0 { _ = server.turn() }
    let cancelled = server.sendWithoutWaiting([
      #"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"p"}}"#,
      #"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"p"}}"#,
    ])
    #expect(cancelled.count == 1)
    let reply = try JSONReader.parse(cancelled[0])
    #expect(reply.at("error.code") == .int(-32800))
    #expect(server.service.longCalls.isEmpty)
    poster.open()
    while server.service.delivery?.inFlight != 0 { #expect(server.turn().isEmpty) }
    #expect(server.service.store.count == 0)  // the request in flight was acked as usual
    #expect(server.service.delivery?.summary.delivered == 3)
    #expect(poster.posts.load(ordering: .relaxed) == 1)
  }

  @Test func unknownIdsAndNotificationsAreLeftAlone() throws {
    let poster = GatedPoster()
    let server = try server(poster)
    let lines = server.sendWithoutWaiting([
      #"{"jsonrpc":"2.0","method":"deliverPending"}"#,
      #"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":null}}"#,
      #"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"nope"}}"#,
    ])
    #expect(lines.isEmpty)
    #expect(!server.service.longCalls.isEmpty && server.service.longCalls.awaitingReply == 0)
    poster.open()
    while !server.service.longCalls.isEmpty { #expect(server.turn().isEmpty) }  // never answered
    #expect(server.service.store.count == 0)  // but run to its end
  }

  @Test func inABatchAPassRunsToItsEndInPlace() throws {
    let poster = GatedPoster()
    poster.open()
    let server = try server(poster)
    let lines = server.send(
      #"[{"jsonrpc":"2.0","id":1,"method":"deliverPending"},{"jsonrpc":"2.0","id":2,"method":"status"}]"#)
    #expect(lines.count == 1)
    let batch = try JSONReader.parse(lines[0])
    #expect(batch.at("0.result.delivered") == .int(3))
    #expect(batch.at("1.result.pending.total") == .int(0))
  }

  @Test func aPassWithNothingToSendIsAnsweredInOrder() throws {
    let server = InProcessServer {
      $0.delivery.endpoint = "https://rest.example.invalid"
      $0.delivery.apiKey = Secret("k")
    }
    let lines = server.sendWithoutWaiting([
      #"{"jsonrpc":"2.0","id":1,"method":"deliverPending","params":{"workDoneToken":1}}"#,
      #"{"jsonrpc":"2.0","id":2,"method":"status"}"#,
    ])
    #expect(try ids(lines) == [.int(1), .int(2)])  // no progress for a call answered in its first step
  }

  @Test func progressTokensMustBeStringsOrIntegers() throws {
    let server = InProcessServer {
      $0.delivery.endpoint = "https://rest.example.invalid"
      $0.delivery.apiKey = Secret("k")
    }
    let reply = try server.request("deliverPending", #"{"workDoneToken":1.5,"_meta":{"progressToken":[]}}"#)
    #expect(reply.at("error.data.errors.0.path") == .string("workDoneToken"))
    #expect(reply.at("error.data.errors.1.path") == .string("_meta.progressToken"))
  }
}

/// A large `importLegacy` is a long call: a chunk per loop turn, other requests answered meanwhile.
@Suite struct LongImportTests {
  static func importLine(_ count: Int, id: Int = 1) -> String {
    let events = (0..<count).map { #"{"event_name":"e\#($0)","n":\#($0)}"# }.joined(separator: ",")
    return #"{"jsonrpc":"2.0","id":\#(id),"method":"importLegacy","params":{"pending_custom_events":[\#(events)]}}"#
  }

  @Test func aLargeImportLetsLaterRequestsThroughAndSavesEveryElementOnce() throws {
    let server = InProcessServer()
    let count = ImportLegacy.longCallElements * 2 + 7
    let first = server.sendWithoutWaiting([
      Self.importLine(count), #"{"jsonrpc":"2.0","id":2,"method":"status"}"#,
      #"{"jsonrpc":"2.0","id":3,"method":"saveCustomEvent","params":{"name":"between"}}"#,
    ])
    #expect(try first.map { try JSONReader.parse($0)["id"] } == [.int(2), .int(3)])
    #expect(try JSONReader.parse(first[0]).at("result.pending.total")?.intValue ?? 0 < count)
    var rest: [String] = []
    while rest.isEmpty { rest = server.turn() }
    let reply = try JSONReader.parse(rest[0], maxDepth: 1000)
    #expect(reply.at("result.saved") == .int(Int64(count)))
    #expect(reply.at("result.results")?.arrayValue?.count == count)
    #expect(server.service.store.count == count + 1)
    let drained = try server.request("flushPending", #"{"max":100000}"#, id: 4)
    let names = Set(drained.at("result.items")?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? [])
    #expect(names.count == count + 1)
  }

  @Test func aSmallImportIsAnsweredInOrder() throws {
    let server = InProcessServer()
    let lines = server.sendWithoutWaiting([
      Self.importLine(ImportLegacy.longCallElements), #"{"jsonrpc":"2.0","id":2,"method":"status"}"#,
    ])
    #expect(try lines.map { try JSONReader.parse($0, maxDepth: 1000)["id"] } == [.int(1), .int(2)])
  }

  @Test func aLargeImportCannotBeCancelled() throws {
    let server = InProcessServer()
    let count = ImportLegacy.longCallElements + 1
    let lines = server.sendWithoutWaiting([
      Self.importLine(count), #"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}"#,
    ])
    #expect(lines.isEmpty)
    var rest: [String] = []
    while rest.isEmpty { rest = server.turn() }
    #expect(try JSONReader.parse(rest[0], maxDepth: 1000).at("result.saved") == .int(Int64(count)))
  }
}
