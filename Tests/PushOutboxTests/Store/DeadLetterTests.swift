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

/// Dead letters: out of the pending set, listed with their reason, requeued or dropped, and kept
/// across restarts and compactions.
@Suite struct DeadLetterTests {
  @discardableResult
  private func session<T>(_ dir: URL, _ body: (InProcessServer) throws -> T) throws -> T {
    let server = InProcessServer {
      $0.memory = false
      $0.storePath = dir.path
      $0.snapshotInterval = 3600
    }
    try server.service.openDisk()
    let result = try body(server)
    server.service.disk?.finish(server.service.store, now: server.service.clock.now())
    return result
  }

  private func saveEvents(_ server: InProcessServer, _ count: Int) throws {
    for n in 1...count {
      let reply = try server.request("saveCustomEvent", #"{"name":"e\#(n)","user":{"externalId":"u\#(n)"}}"#, id: n)
      #expect(reply.at("result.seq") == .int(Int64(n)))
    }
  }

  private func deadNames(_ server: InProcessServer) throws -> [String] {
    let list = try server.request("listDeadLetters", "{}")
    return list.at("result.deadLetters")?.arrayValue?.compactMap { $0.at("item.name")?.stringValue } ?? []
  }

  /// Settles a delivery lease over `seqs` the way the delivery engine does, and commits.
  private func deliver(_ server: InProcessServer, _ seqs: [UInt64], delivered: [UInt64], dead: [(UInt64, String)]) {
    let store = server.service.store
    store.lease(Lease(flushId: "d-\(seqs)", seqs: seqs, expiresAt: Int64(4e12), note: [], origin: .delivery))
    store.settle("d-\(seqs)", delivered: delivered, dead: dead)
    #expect(store.commit() == nil)
  }

  @Test func anItemWithNoIdentifierBecomesADeadLetterSoADrainLoopEnds() throws {
    let server = InProcessServer()
    _ = try server.request("saveCustomEvent", #"{"name":"anonymous"}"#, id: 1)
    _ = try server.request("saveCustomEvent", #"{"name":"known","user":{"externalId":"u"}}"#, id: 2)
    let first = try server.request("flushPending", #"{"format":"usersTrack"}"#)
    #expect(first.at("result.skipped.0.reason") == .string("no_identifier"))
    #expect(first.at("result.remaining") == .int(0))
    let second = try server.request("flushPending", #"{"format":"usersTrack"}"#)
    #expect(second.at("result.requests") == .array([]))
    #expect(second.at("result.skipped") == .array([]))
    let list = try server.request("listDeadLetters", "{}")
    #expect(list.at("result.deadLetters.0.reason") == .string("no_identifier"))
    #expect(list.at("result.total") == .int(1))
    #expect(try server.request("status").at("result.pending.total") == .int(0))
    #expect(try server.request("requeueDeadLetters", "{}").at("result.requeued") == .int(1))
    let again = try server.request("flushPending", #"{"format":"usersTrack","defaultUser":{"externalId":"d"}}"#)
    #expect(again.at("result.requests.0.events.0.external_id") == .string("d"))
    #expect(try deadNames(server) == [])
  }

  @Test func deadLettersSurviveRestartsAndCompaction() throws {
    let dir = Paths.temporaryDirectory()
    try session(dir) { server throws in
      try saveEvents(server, 5)
      deliver(server, [1, 2, 3], delivered: [1], dead: [(2, "bad \"name\"")])
    }
    for round in 0..<2 {  // each clean exit compacts the touched segment; the state must come back the same
      try session(dir) { server throws in
        #expect(try deadNames(server) == ["e2"])
        let list = try server.request("listDeadLetters", "{}")
        #expect(list.at("result.deadLetters.0.reason") == .string("bad \"name\""))
        #expect(list.at("result.deadLetters.0.item.deliveryCount") == .int(0))
        let items = try server.request("flushPending", #"{"max":10,"leaseMs":1000}"#).at("result.items")?.arrayValue
        #expect(items?.map { $0["name"]?.stringValue } == ["e3", "e4", "e5"])
        // released by the settle: one delivery more (and one per releaseFlush below)
        #expect(items?.first?["deliveryCount"] == .int(Int64(1 + round)))
        let flushId = try server.request("flushPending", #"{"leaseMs":1000}"#).at("result.flushId")?.stringValue ?? ""
        _ = try server.request("releaseFlush", #"{"flushId":"\#(flushId)"}"#)
      }
    }
  }

  @Test func requeueAndDropAreDurable() throws {
    let dir = Paths.temporaryDirectory()
    var ids: [String] = []
    try session(dir) { server throws in
      try saveEvents(server, 4)
      deliver(server, [1, 2, 3, 4], delivered: [], dead: [(1, "a"), (2, "b"), (3, "c")])
      let list = try server.request("listDeadLetters", #"{"max":3}"#)
      ids = list.at("result.deadLetters")?.arrayValue?.compactMap { $0.at("item.id")?.stringValue } ?? []
      #expect(ids.count == 3)
    }
    try session(dir) { server throws in
      #expect(try server.request("requeueDeadLetters", #"{"ids":["\#(ids[0])"]}"#).at("result.requeued") == .int(1))
      #expect(try server.request("dropDeadLetters", #"{"ids":["\#(ids[1])","nope"]}"#).at("result.dropped") == .int(1))
      #expect(try server.request("dropDeadLetters", "{}").at("error.code") == .int(-32602))
    }
    try session(dir) { server throws in
      #expect(try deadNames(server) == ["e3"])
      #expect(try server.request("status").at("result.pending.total") == .int(2))
      let items = try server.request("flushPending", "{}").at("result.items")?.arrayValue
      #expect(items?.map { $0["name"]?.stringValue } == ["e1", "e4"])
    }
    try session(dir) { server throws in
      #expect(try deadNames(server) == ["e3"])
      #expect(try server.request("status").at("result.pending.total") == .int(0))
    }
  }
}
