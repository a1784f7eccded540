import Testing

@testable import OutboxStore

/// `Column` against `Array` as the model: seeded random appends, writes, removals, reservations and
/// selections (by index and by block), with copies taken along the way that must keep the values
/// they had (copy-on-write).
@Suite struct ColumnTests {
  @Test(arguments: [1, 2, 3, 4]) func randomOperationsMatchAnArray(seed: UInt64) {
    var generator = SeededGenerator(seed: seed)  // a failure replays from its seed
    var column = Column<UInt64>()
    var model: [UInt64] = []
    var copies: [(column: Column<UInt64>, model: [UInt64])] = []
    for step in 0..<20_000 {
      let operation = generator.next() % 10
      switch model.isEmpty && (5...7).contains(operation) ? 0 : operation {
      case 0...4:
        let value = generator.next()
        column.append(value)
        model.append(value)
      case 5, 6:
        let index = Int(generator.next() % UInt64(model.count))
        let value = generator.next()
        column[index] = value
        model[index] = value
      case 7:
        #expect(column.removeLast() == model.removeLast(), "seed \(seed), step \(step)")
      case 8:
        column.reserveCapacity(model.count + Int(generator.next() % 5_000))
        #expect(column.capacity >= model.count)
      case 9 where generator.next() % 4 == 0:
        let indices = model.indices.filter { _ in generator.next() % 3 != 0 }
        column = column.selecting(indices)
        model = indices.map { model[$0] }
      case 9 where generator.next() % 3 == 0:  // a block, as a compaction keeps when only the head went
        let start = Int(generator.next() % UInt64(model.count + 1))
        let range = start..<(start + Int(generator.next() % UInt64(model.count - start + 1)))
        column = column.selecting(range)
        model = Array(model[range])
      default:
        copies.append((column, model))
        if copies.count > 8 { copies.removeFirst() }
      }
      guard step % 97 == 0 else { continue }
      #expect(Array(column) == model, "seed \(seed), step \(step)")
      for copy in copies { #expect(Array(copy.column) == copy.model, "seed \(seed), step \(step): a copy changed") }
    }
    #expect(Array(column) == model)
    #expect(column.withUnsafeBufferPointer { Array($0) } == model)
  }

  @Test func aCopyKeepsItsValuesWhenTheOriginalGrows() {
    var column = Column<UInt32>()
    for value in 0..<1_000 { column.append(UInt32(value)) }
    let copy = column
    for value in 1_000..<100_000 { column.append(UInt32(value)) }  // grows past the shared capacity
    column[0] = 7
    #expect(copy.count == 1_000 && copy[0] == 0 && copy[999] == 999)
    #expect(column.count == 100_000 && column[0] == 7 && column[99_999] == 99_999)
  }
}
