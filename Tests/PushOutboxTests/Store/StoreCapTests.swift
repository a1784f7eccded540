import Foundation
import Testing

@testable import OutboxJSON
@testable import OutboxServer
@testable import OutboxStore
@testable import OutboxSupport

/// `--max-store-bytes` in process: the headroom rule and the refusals' figures.
@Suite struct StoreCapTests {
  @Test func segmentsAndHeadroomFollowTheCap() {
    let small = StoreCap(max: StoreCap.minimum)
    #expect(small.segmentLimit == 16 << 10)
    #expect(small.headroom(checkpointBytes: 0) == 3 * (16 << 10) + (16 << 10))
    let mid = StoreCap(max: 1 << 20)
    #expect(mid.segmentLimit == 64 << 10)
    #expect(mid.headroom(checkpointBytes: 20_000) == 3 * (64 << 10) + 40_000)
    #expect(StoreCap(max: 1 << 40).segmentLimit == Journal.segmentLimit)
  }

  /// Saves stop where the next record would pass the usable bytes; `firstRefused` names the first
  /// item of a group that would, with the current bytes; nothing the refusal names was stored.
  @Test func refusalsNameTheCapAndTheCurrentBytes() throws {
    let dir = Paths.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let server = InProcessServer {
      $0.memory = false
      $0.storePath = dir.path
      $0.snapshotInterval = 3600
      $0.store.maxStoreBytes = StoreCap.minimum
    }
    try server.service.openDiskInTests()
    let store = server.service.store
    let usable = try #require(store.usableStoreBytes)
    var saved = 0
    while true {
      let reply = try server.request(
        "saveCustomEvent", #"{"name":"e","properties":{"p":"\#(String(repeating: "x", count: 200))"}}"#, id: saved)
      if reply.at("error") != nil {
        #expect(reply.at("error.data.limit") == .string("max-store-bytes"))
        #expect(reply.at("error.data.max") == .int(Int64(StoreCap.minimum)))
        #expect(reply.at("error.data.current") == .int(Int64(store.storeBytes)))
        break
      }
      saved += 1
    }
    #expect(saved > 0 && store.count == saved)
    #expect(store.storeBytes <= usable)
    let room = usable - store.storeBytes
    let one = SegmentFormat.itemRecordBytes(body: 10, clientID: 0)
    let fits = room / one
    let refused = store.firstRefused(Array(repeating: (body: 10, clientID: 0), count: fits + 2))
    #expect(refused?.index == fits)
    #expect(refused?.error == .storeFull(limit: "max-store-bytes", value: StoreCap.minimum, current: store.storeBytes))
    server.service.disk?.finish(store, now: server.service.clock.now())
  }
}
