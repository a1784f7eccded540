import Dispatch
import Synchronization
import Testing

@testable import OutboxFleet
@testable import OutboxJSON
@testable import OutboxNATS
@testable import OutboxServer
@testable import OutboxStore
@testable import OutboxSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A publisher that plays JetStream: it keeps each message id once (a repeat is acked
/// `duplicate: true`), and misbehaves as told, one behaviour per publish call.
final class FakePublisher: RelayPublisher, @unchecked Sendable {
  enum Behaviour: Sendable {
    case ack
    /// The call throws; nothing reaches the stream.
    case fail
    /// The messages reach the stream, the acks never come back.
    case loseAcks
    /// The stream refuses every message (full).
    case full
    /// The call waits until `unblock`, then acks.
    case block
  }

  struct State {
    var script: [Behaviour] = []
    var stored: [String: Int] = [:]
    /// Message ids in the order the stream first took them.
    var order: [String] = []
    var connectFailures = 0
    var calls = 0
  }

  let state = Mutex(State())
  private let gate = DispatchSemaphore(value: 0)

  init(script: [Behaviour] = [], connectFailures: Int = 0) {
    state.withLock {
      $0.script = script
      $0.connectFailures = connectFailures
    }
  }

  func unblock() { gate.signal() }

  func connect() throws(NATSError) -> Int {
    let fail = state.withLock { state in
      defer { state.connectFailures -= 1 }
      return state.connectFailures > 0
    }
    if fail { throw NATSError(.unreachable, "cannot connect (fake)") }
    return 1 << 20
  }

  func publish(_ messages: [OutgoingMessage], deadline: Double) throws(NATSError) -> [PublishAck?] {
    let behaviour = state.withLock { state in
      state.calls += 1
      return state.script.isEmpty ? .ack : state.script.removeFirst()
    }
    switch behaviour {
    case .fail: throw NATSError(.closed, "connection closed (fake)")
    case .full: return messages.map { _ in .refused("maximum bytes exceeded", code: 10077) }
    case .block: gate.wait()
    case .ack, .loseAcks: break
    }
    let acks: [PublishAck?] = state.withLock { state in
      messages.map { message in
        let id = message.headers.first { $0.name == "Nats-Msg-Id" }!.value
        let seen = state.stored[id] != nil
        if !seen { state.order.append(id) }
        state.stored[id, default: 0] += 1
        return .stored(seq: UInt64(state.stored.count), duplicate: seen)
      }
    }
    return behaviour == .loseAcks ? messages.map { _ in nil } : acks
  }

  func close() {}
}

/// `--relay` in process: the real loop over a memory transport, the `RelayWorker` thread and a fake
/// publisher. What the store acknowledged is in the fake stream once, and nothing left the store
/// that the fake did not ack.
@Suite struct BackgroundRelayTests {
  private func relay(_ fake: FakePublisher, publishSeconds: Double = 10) -> BackgroundRelay {
    let worker = RelayWorker(publisher: fake, publishSeconds: publishSeconds, backoffFirst: 0.001)
    worker.start()
    return BackgroundRelay(worker: worker, to: "nats://fake:4222", stream: "S", backoffFirst: 0.001)
  }

  private func save(_ server: InProcessServer, _ id: Int, user: String) throws -> String {
    let reply = try server.request("saveCustomEvent", #"{"name":"e\#(id)","user":{"externalId":"\#(user)"}}"#, id: id)
    return try #require(reply["result"]?["id"]?.stringValue)
  }

  private func waitUntil(_ server: InProcessServer, _ done: () -> Bool) {
    for _ in 0..<20_000 where !done() { _ = server.turn() }
    #expect(done(), "timed out")
  }

  @Test(arguments: [1, 2, 3] as [UInt64])
  func whatTheStoreGaveUpIsInTheStreamOnce(seed: UInt64) throws {
    var rng = SeededGenerator(seed: seed)
    let behaviours: [FakePublisher.Behaviour] = [.ack, .ack, .fail, .loseAcks, .full, .ack]
    let script = (0..<40).map { _ in behaviours.randomElement(using: &rng)! }
    let fake = FakePublisher(script: script, connectFailures: Int.random(in: 0...3, using: &rng))
    let server = InProcessServer { $0.fixedClock = nil }
    let background = relay(fake)
    server.service.relay = background
    var saved: Set<String> = []
    var byUser: [String: [String]] = [:]
    for n in 1...400 {
      let user = "u\(Int.random(in: 0..<9, using: &rng))"
      let id = try save(server, n, user: user)
      saved.insert(id)
      byUser[user, default: []].append(id)
      if Int.random(in: 0..<20, using: &rng) == 0 { _ = server.turn() }
    }
    waitUntil(server) { server.service.store.count == 0 }
    #expect(server.service.store.count == 0)
    let stored = fake.state.withLock { $0.stored }
    let missing = saved.subtracting(stored.keys)
    #expect(missing.isEmpty, "\(missing.count) of \(saved.count) items left the store without reaching the stream")
    #expect(Set(stored.keys).isSubset(of: saved))
    // Each user's items reach the stream in save order, through failures and rounds in flight.
    let position = Dictionary(uniqueKeysWithValues: fake.state.withLock { $0.order }.enumerated().map { ($1, $0) })
    for (user, ids) in byUser {
      let places = ids.compactMap { position[$0] }
      #expect(places == places.sorted(), "\(user)'s items reached the stream out of save order")
    }
    let status = background.statusJSON(nowMs: 0)
    #expect(status["published"]?.intValue == Int64(saved.count))
    background.finish(service: server.service)
  }

  @Test func nothingLeavesTheStoreWithoutItsAck() throws {
    let fake = FakePublisher(script: Array(repeating: .full, count: 1_000))
    let server = InProcessServer { $0.fixedClock = nil }
    let background = relay(fake)
    server.service.relay = background
    for n in 1...50 { _ = try save(server, n, user: "u\(n % 4)") }
    waitUntil(server) { fake.state.withLock { $0.calls } >= 3 }
    #expect(server.service.store.count == 50)
    #expect(fake.state.withLock { $0.stored.isEmpty })
    let lastError = background.statusJSON(nowMs: 0)["lastError"]?.stringValue ?? ""
    #expect(lastError.contains("is full"))
    background.finish(service: server.service)
  }

  @Test func exitGivesBackARoundStillInFlight() throws {
    let fake = FakePublisher(script: [.block])
    let server = InProcessServer { $0.fixedClock = nil }
    let background = BackgroundRelay(
      worker: {
        let worker = RelayWorker(publisher: fake, backoffFirst: 0.001)
        worker.start()
        return worker
      }(), to: "nats://fake:4222", stream: "S", exitWaitSeconds: 0.05)
    for n in 1...30 { _ = try save(server, n, user: "u\(n % 3)") }
    server.service.relay = background  // one round of all 30
    waitUntil(server) { background.statusJSON(nowMs: 0)["inFlight"]?.intValue == 30 }
    #expect(server.service.store.leases.count == 1)
    background.finish(service: server.service)
    #expect(server.service.store.leases.isEmpty)  // released: pending again at once
    #expect(server.service.store.count == 30)
    fake.unblock()
  }
}
