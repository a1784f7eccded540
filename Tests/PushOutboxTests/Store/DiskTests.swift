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

/// The store on disk, in process: restarts, durable leases, compaction, upgrade and refusals.
@Suite struct DiskTests {
  /// Runs `body` against a server on `dir`, then finishes it as a clean exit would.
  @discardableResult
  private func session<T>(
    _ dir: URL, clock: String = "2026-01-01T00:00:00.000Z", _ configure: (inout Configuration) -> Void = { _ in },
    _ body: (InProcessServer) throws -> T
  ) throws -> T {
    let server = InProcessServer {
      $0.memory = false
      $0.storePath = dir.path
      $0.snapshotInterval = 3600
      $0.fixedClock = ISO8601.parseDateTime(clock)
      configure(&$0)
    }
    try server.service.openDiskInTests()
    let result = try body(server)
    server.service.disk?.finish(server.service.store, now: server.service.clock.now())
    return result
  }

  private func save(_ server: InProcessServer, _ n: Int, email: String? = nil) throws {
    let reply: JSONValue
    if let email {
      reply = try server.request(
        "saveUserAttribute", #"{"field":"email","value":"\#(email)","user":{"externalId":"u\#(n)"}}"#, id: n)
    } else {
      reply = try server.request("saveCustomEvent", #"{"name":"e\#(n)","user":{"externalId":"u\#(n)"}}"#, id: n)
    }
    #expect(reply.at("result.seq") != nil, "\(reply)")
  }

  private func files(_ dir: URL) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted()
  }

  private func diskContains(_ dir: URL, _ marker: String) -> Bool {
    files(dir).contains { name in
      (try? Data(contentsOf: dir.appendingPathComponent(name)))?.range(of: Data(marker.utf8)) != nil
    }
  }

  @Test func itemsSurviveARestartExactly() throws {
    let dir = Paths.temporaryDirectory()
    let before = try session(dir) { server in
      for n in 1...50 { try save(server, n) }
      return try server.request("flushPending", #"{"leaseMs":1}"#, id: 99).at("result.items")
    }
    try session(dir, clock: "2026-01-01T00:00:00.000Z") { server in
      let after = try server.request("flushPending", #"{"leaseMs":1}"#, id: 99).at("result.items")
      #expect(after == before)
    }
  }

  /// The store's id key is kept in its checkpoint: the next process, with a key of its own, still
  /// recomputes the loaded rows' ids (none is held in a record) and gives new items ids from it.
  @Test func theIdKeyOutlivesItsProcess() throws {
    let dir = Paths.temporaryDirectory()
    let key = try session(dir, { $0.idSeed = 41 }) { server in
      for n in 1...20 { try save(server, n) }
      return server.service.store.items.idKey
    }
    try session(dir, { $0.idSeed = 42 }) { server in
      let items = server.service.store.items
      #expect(items.idKey == key)
      #expect(items.count == 20)
      #expect(items.table.rows.allSatisfy { items.bodies.explicitID(items.record($0)) == nil })
      try save(server, 21)
      let row = try #require(items.table.row(of: 21))
      let words = IDGenerator.words(key: key, ms: items.table.savedAt[row], counter: 21)
      #expect(items.id(row: row) == ItemID(high: words.high, low: words.low))
    }
  }

  /// `Store.withdraw` (a group saved whole or not at all that cannot be finished): the withdrawn
  /// saves are gone from memory and do not come back from the journal at the next start.
  @Test func withdrawnSavesDoNotComeBackAfterARestart() throws {
    let dir = Paths.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    try session(dir) { server in
      try save(server, 1)
      let store = server.service.store
      var seqs: [UInt64] = []
      for n in 2...3 {
        let body = Array(#","name":"w\#(n)""#.utf8)
        let receipt = try body.withUnsafeBytes {
          try store.save(kind: .customEvent, id: ItemID(high: 1, low: UInt64(n)), savedAt: 0, hasUser: false, body: $0)
        }
        seqs.append(receipt.seq)
      }
      #expect(store.count == 3)
      store.withdraw(seqs)
      #expect(store.count == 1)
      #expect(!store.hasUncommitted)
      #expect(store.commit() == nil)
    }
    try session(dir) { server in
      let items = try server.request("flushPending", "{}", id: 9).at("result.items")
      #expect(items?.arrayValue?.count == 1, "\(String(describing: items))")
    }
  }

  /// `HeldItems.firstRefused`: the refusal one save after another would meet, with its index.
  @Test func firstRefusedNamesTheItemThatWouldNotFit() {
    let store = Store(
      limits: {
        var l = StoreLimits(); l.maxPending = 3; l.maxItemBytes = 500; return l
      }())
    #expect(store.items.firstRefused(itemBytes: [100, 100, 100]) == nil)
    let full = store.items.firstRefused(itemBytes: [100, 100, 100, 100, 100])
    #expect(full?.index == 3)
    #expect(full?.error == .storeFull(limit: "max-pending", value: 3))
    let large = store.items.firstRefused(itemBytes: [100, 600])
    #expect(large?.index == 1)
    #expect(large?.error == .itemTooLarge(bytes: 600, limit: 500))
  }

  @Test func aLeaseOutlivesItsProcessAndIsAckedByTheNext() throws {
    let dir = Paths.temporaryDirectory()
    let flushId = try session(dir) { server in
      for n in 1...5 { try save(server, n) }
      let lease = try server.request("flushPending", #"{"leaseMs":600000,"max":3}"#)
      return try #require(lease.at("result.flushId")?.stringValue)
    }
    try session(dir) { server in
      let live = try server.request("status").at("result.lease.flushId")?.stringValue
      #expect(live == flushId)
      let acked = try server.request("ackFlush", #"{"flushId":"\#(flushId)"}"#).at("result.acked")
      #expect(acked == .int(3))
    }
    try session(dir) { server in
      let status = try server.request("status")
      #expect(status.at("result.pending.total") == .int(2))
      #expect(status.at("result.lease") == .null)
      let repeated = try server.request("ackFlush", #"{"flushId":"\#(flushId)"}"#).at("result.acked")
      #expect(repeated == .int(0))  // a repeat in a later process is still a harmless 0
    }
  }

  @Test func anExpiredLeaseComesBackWithOneMoreDeliveryAcrossARestart() throws {
    let dir = Paths.temporaryDirectory()
    try session(dir) { server in
      try save(server, 1)
      _ = try server.request("flushPending", #"{"leaseMs":1000}"#)
    }
    try session(dir, clock: "2026-01-01T00:00:05.000Z") { server in
      let items = try server.request("flushPending", "{}").at("result.items")
      #expect(items?.at("0.deliveryCount") == .int(1))
    }
  }

  @Test func drainedDataLeavesEveryFileAtTheNextSnapshot() throws {
    let dir = Paths.temporaryDirectory()
    try session(dir) { server in
      for n in 1...20 { try save(server, n, email: "keep\(n)@example.com") }
      try save(server, 21, email: "secret-marker@example.com")
      for n in 22...40 { try save(server, n, email: "keep\(n)@example.com") }
      server.service.store.drain([21], flushId: "x")
      _ = server.send("")  // commits the removal record
    }
    #expect(!diskContains(dir, "secret-marker"))
    #expect(diskContains(dir, "keep40@example.com"))
    try session(dir) { server in
      let total = try server.request("status").at("result.pending.total")
      #expect(total == .int(39))
    }
  }

  @Test func startsThatSaveNothingLeaveNoSegments() throws {
    let dir = Paths.temporaryDirectory()
    for _ in 0..<20 { try session(dir) { _ = try $0.request("status") } }
    #expect(files(dir).filter { $0.hasPrefix("segment.") }.isEmpty)
    try session(dir) { try save($0, 1) }
    for _ in 0..<20 { try session(dir) { _ = try $0.request("status") } }
    #expect(files(dir).filter { $0.hasPrefix("segment.") }.count == 1)
  }

  @Test func aMissingSegmentRefusesTheStartUnlessTheLossIsAccepted() throws {
    let dir = Paths.temporaryDirectory()
    try session(dir) { server in for n in 1...3 { try save(server, n) } }
    for name in files(dir) where name.hasPrefix("segment.") {
      try FileManager.default.removeItem(at: dir.appendingPathComponent(name))
    }
    #expect(throws: StartupError.self) { try session(dir) { _ in } }
    try session(dir, { $0.acceptLoss = true }) { server in
      let recovery = try server.request("status").at("result.recovery.0.code")
      #expect(recovery == .string("recoveredWithLoss"))
    }
  }

  @Test func aStoreOthersCanWriteIsRefused() throws {
    let dir = Paths.temporaryDirectory()
    chmod(dir.path, 0o777)
    do {
      try session(dir) { _ in }
      Issue.record("a world-writable store was accepted")
    } catch let error as StartupError {
      #expect(error.exit == .failure && error.message.contains("others"))
    }
  }

  @Test func aSymlinkedLockIsNeverFollowed() throws {
    let dir = Paths.temporaryDirectory()
    let victim = Paths.temporaryDirectory().appendingPathComponent("victim")
    try Data("keep".utf8).write(to: victim)
    symlink(victim.path, dir.appendingPathComponent("LOCK").path)
    #expect(throws: StartupError.self) { try session(dir) { _ in } }
    #expect(try Data(contentsOf: victim) == Data("keep".utf8))
  }

  @Test func hostileRecordsWithValidChecksumsAreDamageNotACrash() throws {
    let dir = Paths.temporaryDirectory()
    var bytes = SegmentFormat.header
    let body = Array(#","name":"e","properties":{},"time":"2026-01-01T00:00:00.000Z""#.utf8)
    func item(_ seq: UInt64, savedAt: Int64) {
      body.withUnsafeBytes {
        SegmentFormat.appendItem(
          seq: seq, savedAt: savedAt, deliveries: 0, kind: .customEvent, hasUser: false, id: ItemID(high: seq, low: 1),
          body: $0, to: &bytes)
      }
    }
    item(1, savedAt: 0)
    item(UInt64.max, savedAt: 0)  // a seq no arithmetic could add one to
    item(3, savedAt: Int64.max)  // past year 9999
    SegmentFormat.appendRemove([UInt64.max, 77], recordSeq: 4, to: &bytes)
    item(5, savedAt: 1)
    try Data(bytes).write(to: dir.appendingPathComponent(SegmentFormat.name(first: 1)))
    try session(dir) { server in
      let status = try server.request("status")
      #expect(status.at("result.pending.total") == .int(2))
      let codes = status.at("result.recovery").flatMap { value -> [JSONValue]? in
        if case .array(let entries) = value { return entries.compactMap { $0.at("code") } }
        return nil
      }
      #expect(codes == [.string("recoveredWithLoss"), .string("recoveredWithLoss")])
      let next = try server.request("saveCustomEvent", #"{"name":"after"}"#).at("result.seq")
      #expect(next == .int(6))
    }
  }
}
