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

/// Random operations against the real store on disk and a plain model of what must be held, with
/// snapshots (checkpoint plus compaction) and restarts in between: after every restart the store
/// holds exactly the model's items, with their ids, seqs, bodies and delivery counts.
@Suite struct StoreModelTests {
  struct Model {
    var items: [UInt64: (body: String, deliveries: UInt32)] = [:]
    var leases: [String: [UInt64]] = [:]
  }

  private func open(_ dir: URL, clock: Int64) throws -> InProcessServer {
    let server = InProcessServer {
      $0.memory = false
      $0.storePath = dir.path
      $0.snapshotInterval = 0.000_001
      $0.fixedClock = clock
      $0.idSeed = UInt64(clock)
    }
    try server.service.openDiskInTests()
    return server
  }

  private func check(_ server: InProcessServer, _ model: Model, _ context: String) {
    let store = server.service.store.items
    #expect(store.count == model.items.count, "\(context)")
    for (seq, want) in model.items {
      guard let item = store.item(seq: seq) else {
        Issue.record("\(context): seq \(seq) is missing")
        continue
      }
      #expect(String(decoding: item.body, as: UTF8.self) == want.body, "\(context): seq \(seq)")
      #expect(item.deliveryCount == want.deliveries, "\(context): seq \(seq) deliveries")
    }
    #expect(Set(server.service.store.leases.map(\.flushId)) == Set(model.leases.keys), "\(context): leases")
  }

  /// The `m<step>z` markers found in the store's files.
  private func markers(in dir: URL) -> Set<String> {
    var found = Set<String>()
    let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
    for name in names where name != "quarantine" {
      guard let data = try? Data(contentsOf: dir.appendingPathComponent(name)) else { continue }
      let text = String(decoding: data, as: UTF8.self)
      var rest = text[...]
      while let start = rest.range(of: "\"p\":\"m") {
        let tail = rest[start.upperBound...]
        guard let end = tail.firstIndex(of: "z") else { break }
        found.insert("m" + tail[..<end] + "z")
        rest = tail[end...]
      }
    }
    return found
  }

  @Test(arguments: [1, 2, 3]) func randomOperationsSurviveSnapshotsAndRestarts(seed: UInt64) throws {
    let dir = Paths.temporaryDirectory()
    var rng = SeededGenerator(seed: seed)
    var model = Model()
    var clock: Int64 = 1_767_225_600_000
    var server: InProcessServer! = try open(dir, clock: clock)
    var gone = Set<UInt64>()
    var markerSeqs: [UInt64: String] = [:]
    for step in 0..<1500 {
      let roll = Int.random(in: 0..<100, using: &rng)
      let store = server.service.store
      if roll < 55 {
        let pad = "m\(step)z" + String(repeating: "x", count: Int.random(in: 0...240, using: &rng))
        let reply = try server.request(
          "saveCustomEvent", #"{"name":"e\#(step)","properties":{"p":"\#(pad)"}}"#, id: step)
        let seq = try #require(reply.at("result.seq").flatMap { if case .int(let n) = $0 { UInt64(n) } else { nil } })
        model.items[seq] = (String(decoding: store.items.item(seq: seq)!.body, as: UTF8.self), 0)
        markerSeqs[seq] = "m\(step)z"
      } else if roll < 65, !model.items.isEmpty {
        let free = model.items.keys.filter { seq in !model.leases.values.contains { $0.contains(seq) } }.sorted()
        let picked = Array(free.shuffled(using: &rng).prefix(Int.random(in: 1...20, using: &rng))).sorted()
        store.drain(picked, flushId: "d\(step)")
        for seq in picked { model.items[seq] = nil }
        gone.formUnion(picked)
      } else if roll < 72, model.leases.isEmpty {
        let lease = try server.request(
          "flushPending", #"{"leaseMs":1000,"max":\#(Int.random(in: 1...30, using: &rng))}"#)
        if let id = lease.at("result.flushId")?.stringValue, case .array(let items)? = lease.at("result.items"),
          !items.isEmpty
        {
          model.leases[id] = items.compactMap {
            $0.at("seq").flatMap { if case .int(let n) = $0 { UInt64(n) } else { nil } }
          }
        }
      } else if roll < 78, let (id, seqs) = model.leases.first {
        _ = try server.request("ackFlush", #"{"flushId":"\#(id)"}"#)
        for seq in seqs { model.items[seq] = nil }
        gone.formUnion(seqs)
        model.leases[id] = nil
      } else if roll < 82, let (id, seqs) = model.leases.first {
        _ = try server.request("releaseFlush", #"{"flushId":"\#(id)"}"#)
        for seq in seqs { model.items[seq]?.deliveries += 1 }
        model.leases[id] = nil
      } else if roll < 92 {
        _ = server.send("")  // end of a burst: commit
        server.service.disk?.tick(store, now: clock)
        if Bool.random(using: &rng) { server.service.disk?.settle() }  // else later steps run while it writes
      } else {
        _ = server.send("")
        let crash = Bool.random(using: &rng)
        if crash {
          server.service.disk?.settle()  // a kill -9 right after the last write: no final snapshot
        } else {
          server.service.disk?.finish(store, now: clock)
          let leftovers = markers(in: dir).intersection(gone.map { markerSeqs[$0] ?? "" })
          #expect(
            leftovers.isEmpty, "seed \(seed) step \(step): drained data still on disk: \(leftovers.sorted().prefix(5))")
        }
        clock += Int64.random(in: 0...1500, using: &rng)  // a lease may expire across the restart
        server = nil  // releases the store lock
        server = try open(dir, clock: clock)
        for (id, seqs) in model.leases
        where clock >= 1_767_225_600_000
          && server.service.store.lease(flushId: id).map({ clock >= $0.expiresAt }) == true
        {
          for seq in seqs { model.items[seq]?.deliveries += 1 }
          model.leases[id] = nil
        }
        server.service.expireLeases()
        check(server, model, "seed \(seed) step \(step)")
      }
    }
  }
}

/// A small deterministic generator (splitmix64) so every run of a seed does the same operations.
struct SeededGenerator: RandomNumberGenerator {
  private var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
