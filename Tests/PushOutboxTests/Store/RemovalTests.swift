import Testing

@testable import OutboxStore
@testable import OutboxSupport

/// Removing held items a run at a time (`HeldItems.remove(seqs:)`: the rows looked up once, their
/// user table reads made ahead, looked up again after the table compacts) and the branch-free seq
/// lookup under it, against plain models: a linear scan, and a dictionary of what is held.
@Suite struct RemovalTests {
  private static let users = (0..<40).map { #","user":{"externalId":"u\#($0)"}"# }

  private func add(_ store: HeldItems, seq: UInt64, _ random: inout SeededGenerator) -> [UInt8] {
    let user = random.next() % 8 == 0 ? "" : Self.users[Int(random.next() % UInt64(Self.users.count))]
    let body = Array((user + #","name":"e","properties":{"n":\#(seq)}"#).utf8)
    body.withUnsafeBytes {
      store.append(
        seq: seq, id: ItemID(high: seq, low: 7), kind: .customEvent, savedAt: Int64(seq), hasUser: !user.isEmpty,
        body: $0)
    }
    return body
  }

  @Test(arguments: [1, 2, 3] as [UInt64])
  func lowerBoundAgreesWithALinearScan(seed: UInt64) {
    var random = SeededGenerator(seed: seed)
    for _ in 0..<200 {
      let store = HeldItems()
      var seq: UInt64 = 1 + random.next() % 5
      for _ in 0..<Int(random.next() % 300) {
        _ = add(store, seq: seq, &random)
        seq += 1 + random.next() % 4  // gaps, as removals and other records leave them
      }
      let held = store.table.seqs
      store.remove(seqs: held.filter { _ in random.next() % 3 == 0 })  // moves the head, leaves tombstones
      let table = store.table
      for probe in 0...(seq + 2) {
        let want = (table.head..<table.seqs.count).first { table.seqs[$0] >= probe } ?? table.seqs.count
        #expect(table.lowerBound(probe) == want, "probe \(probe) of \(table.seqs.count) rows from \(table.head)")
      }
    }
  }

  @Test(arguments: [11, 12, 13, 14] as [UInt64])
  func removalReturnsEachHeldSeqOnceAndKeepsTheRestThroughCompactions(seed: UInt64) {
    var random = SeededGenerator(seed: seed)
    let store = HeldItems()
    var model: [UInt64: [UInt8]] = [:]
    for seq in UInt64(1)...12_000 { model[seq] = add(store, seq: seq, &random) }
    while !model.isEmpty {
      let held = model.keys.sorted()
      var batch: [UInt64]
      if random.next() % 2 == 0 {  // a drain: a run from the oldest, so the head moves and the table compacts
        batch = Array(held.prefix(1 + Int(random.next() % 5_000)))
      } else {  // any order, some twice, some never held or gone already
        batch = held.filter { _ in random.next() % 4 == 0 }.shuffled(using: &random)
        batch += batch.prefix(Int(random.next() % 100))
        batch += [0, 12_001 + random.next() % 50, held.first! - 1].filter { _ in random.next() % 2 == 0 }
        batch.shuffle(using: &random)
      }
      var want: [UInt64] = []
      var seen = Set<UInt64>()
      for seq in batch where model[seq] != nil && seen.insert(seq).inserted { want.append(seq) }
      #expect(store.remove(seqs: batch) == want)
      for seq in want { model[seq] = nil }
      #expect(store.count == model.count)
      for (seq, body) in model where random.next() % 16 == 0 { #expect(store.item(seq: seq)?.body == body) }
    }
    #expect(store.bodies.users.count == 0 && store.bytes == 0)  // every entry went with its last row
  }
}
