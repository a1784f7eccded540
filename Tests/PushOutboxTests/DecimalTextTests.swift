import Testing

@testable import OutboxSupport

/// `ByteCursor.put(decimal:)` against the standard library's own decimal text: every power of ten and
/// its neighbours, and seeded random values of every length.
@Suite struct DecimalTextTests {
  private func text(_ value: UInt64) -> String {
    var out: [UInt8] = []
    ByteCursor.append(to: &out, capacity: 20) { $0.put(decimal: value) }
    return String(decoding: out, as: UTF8.self)
  }

  @Test func powersOfTenAndTheirNeighbours() {
    var values: [UInt64] = [0, 1, 9, UInt64.max, UInt64.max - 1]
    var power: UInt64 = 1
    for _ in 0..<19 {
      power *= 10
      values += [power - 1, power, power + 1]
    }
    for value in values { #expect(text(value) == String(value), "value \(value)") }
  }

  @Test(arguments: [1, 2, 3]) func randomValuesOfEveryLength(seed: UInt64) {
    var generator = SeededGenerator(seed: seed)  // a failure replays from its seed
    for _ in 0..<20_000 {
      let bits = Int(generator.next() % 64) + 1
      let value = generator.next() >> (64 - UInt64(bits))
      #expect(text(value) == String(value), "seed \(seed), value \(value)")
    }
  }
}
