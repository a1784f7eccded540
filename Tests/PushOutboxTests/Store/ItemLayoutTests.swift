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

/// The in-memory layout: arena chunks, the struct-of-arrays table and the store on top of them.
@Suite struct ItemLayoutTests {
  private func body(_ text: String) -> [UInt8] { Array(text.utf8) }

  private func fill(_ store: HeldItems, _ count: Int, bodySize: Int = 100) {
    let bytes = [UInt8](repeating: UInt8(ascii: "x"), count: bodySize)
    for n in 0..<count {
      bytes.withUnsafeBytes {
        store.append(
          seq: store.takeSeq(), id: ItemID(high: UInt64(n), low: 1), kind: .customEvent, savedAt: Int64(n),
          hasUser: n % 2 == 0, body: $0)
      }
    }
  }

  @Test func arenaKeepsBytesAndFreesChunksWhenNothingInThemIsLive() {
    let arena = Arena()
    let small = [UInt8](repeating: 7, count: 1000)
    var locations: [ArenaLocation] = []
    for _ in 0..<3000 {
      locations.append(small.withUnsafeBytes { arena.append($0, UnsafeRawBufferPointer(start: nil, count: 0)) })
    }
    #expect(arena.liveBytes == 3_000_000)
    #expect(Array(arena.bytes(at: locations[2999], length: 1000)) == small)
    for location in locations.prefix(2000) { arena.release(location, length: 1000) }
    #expect(arena.liveBytes == 1_000_000)
    #expect(Array(arena.bytes(at: locations[2500], length: 1000)) == small)
    let large = [UInt8](repeating: 9, count: 3 << 20)
    let big = large.withUnsafeBytes { arena.append($0, UnsafeRawBufferPointer(start: nil, count: 0)) }
    #expect(Array(arena.bytes(at: big, length: large.count)) == large)
    arena.release(big, length: large.count)
    #expect(arena.liveBytes == 1_000_000)
  }

  @Test func headRemovalMiddleRemovalAndLookupsStayCorrect() {
    let store = HeldItems()
    fill(store, 10_000)
    #expect(store.count == 10_000)
    #expect(store.remove(seqs: Array(1...6000)).count == 6000)  // from the head: the table compacts
    #expect(store.count == 4000)
    #expect(store.firstSeq == 6001)
    #expect(store.remove(seqs: [8000, 7000, 9999, 123]).count == 3)  // the middle, any order, one already gone
    #expect(!store.contains(seq: 8000) && store.contains(seq: 8001))
    #expect(store.item(seq: 8001)?.savedAt == 8000)
    #expect(store.item(seq: 8001)?.hasUser == true && store.item(seq: 8002)?.hasUser == false)
    #expect(store.items(seqs: [6001, 7000, 10_000]).map(\.seq) == [6001, 10_000])
    #expect(store.bytes == 3997 * PendingItem.byteCount(body: 100, clientID: 0))
  }

  @Test func rollBackTakesBackTheNewestItems() {
    let store = HeldItems()
    fill(store, 5)
    store.rollBack(seqs: [4, 5])
    #expect(store.count == 3 && !store.contains(seq: 5) && store.contains(seq: 3))
    #expect(store.takeSeq() == 6)  // seq numbers are never reused
  }

  @Test func clientIdsCompareByBytesNotCanonicalEquivalence() {
    let store = HeldItems()
    for (n, text) in ["\u{00C5}", "A\u{030A}", "K", "\u{212A}"].enumerated() {
      body("{}").withUnsafeBytes {
        store.append(
          seq: UInt64(n + 1), id: ItemID(client: Array(text.utf8)), kind: .customEvent, savedAt: 0, hasUser: false,
          body: $0)
      }
    }
    #expect(store.seq(clientID: Array("\u{00C5}".utf8)) == 1)
    #expect(store.seq(clientID: Array("A\u{030A}".utf8)) == 2)
    #expect(store.seq(clientID: Array("K".utf8)) == 3)
    #expect(store.seq(clientID: Array("\u{212A}".utf8)) == 4)
  }

  @Test func leasingCountsDeliveriesWhenALeaseEndsUnacked() {
    let store = HeldItems()
    fill(store, 3)
    #expect(store.setLeased([1, 2], true).count == 2)
    #expect(store.leasedCount == 2)
    #expect(store.table.rows.filter { !store.table.has(.leased, $0) }.map { store.table.seqs[$0] } == [3])
    let changed = store.setLeased([1, 2], false, countDelivery: true)
    #expect(changed.map(\.1) == [1, 1])
    #expect(store.item(seq: 1)?.deliveryCount == 1 && store.leasedCount == 0)
  }

  @Test func itemsRenderAsTheFlushWritesThem() {
    let store = HeldItems()
    body(#","name":"a""#).withUnsafeBytes {
      store.append(
        seq: 1, id: ItemID(high: 0x0123_4567_89AB_7DEF, low: 0x8123_4567_89AB_CDEF), kind: .customEvent,
        savedAt: 0, hasUser: false, body: $0)
    }
    var out: [UInt8] = []
    store.item(seq: 1)!.encodeJSON(into: &out)
    #expect(
      String(decoding: out, as: UTF8.self)
        == #"{"id":"01234567-89ab-7def-8123-456789abcdef","seq":1,"kind":"customEvent","savedAt":"1970-01-01T00:00:00.000Z","deliveryCount":0,"name":"a"}"#
    )
  }
}
