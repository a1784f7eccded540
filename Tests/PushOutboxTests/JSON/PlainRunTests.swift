import Testing

@testable import OutboxJSON

/// `CanonicalJSON.stringEndAndPlain` finds a string's end 16 bytes at a time (`PlainRun`), then 8,
/// then byte by byte. Held to a plain model on seeded strings of every length, with a special byte
/// at every place and the string ending at every distance from the end of its buffer.
@Suite struct PlainRunTests {
  /// The bytes the model calls special, one at a time.
  static func isSpecial(_ c: UInt8) -> Bool { c == 0x22 || c == 0x5C || c < 0x20 || c >= 0x80 }

  @Test func sixteenAtATimeAndTheEightByteWordsMarkEverySpecialByte() {
    var rng = SeededGenerator(seed: 16)
    let alphabet: [UInt8] = [0x22, 0x5C, 0x00, 0x1F, 0x20, 0x21, 0x7E, 0x7F, 0x80, 0xC3, 0xFF, 0x61]
    for _ in 0..<20_000 {
      let block = (0..<16).map { _ in
        Int.random(in: 0..<4, using: &rng) == 0
          ? alphabet.randomElement(using: &rng)! : UInt8.random(in: 0x20...0x7E, using: &rng)
      }
      let exact = block.withUnsafeBytes { PlainRun.special($0.baseAddress!) }
      let portable = block.withUnsafeBytes { PlainRun.portable($0.baseAddress!) }
      // Every bit exact: the block that ends a buffer is shifted, so any bit may come to be the lowest.
      let model = block.indices.reduce(UInt32(0)) { Self.isSpecial(block[$1]) ? $0 | 1 << UInt32($1) : $0 }
      #expect(exact == model, "\(block)")
      #expect(portable == model, "\(block)")
    }
  }

  @Test(arguments: [1, 2, 3]) func endsAndPlainnessMatchAPlainModel(seed: UInt64) {
    var rng = SeededGenerator(seed: seed)
    for _ in 0..<3_000 {
      let length = Int.random(in: 0...48, using: &rng)
      var contents = (0..<length).map { _ in UInt8.random(in: 0x20...0x7E, using: &rng) }.filter {
        $0 != 0x22 && $0 != 0x5C
      }
      if !contents.isEmpty, Bool.random(using: &rng) {
        let special: [[UInt8]] = [[0x5C, 0x22], [0x5C, 0x6E], [0x01], [0xC3, 0xA9], [0xE2, 0x80, 0xA8], [0xFF]]
        contents.insert(
          contentsOf: special.randomElement(using: &rng)!, at: Int.random(in: 0...contents.count, using: &rng))
      }
      let lead = Int.random(in: 0...20, using: &rng)
      let after = Int.random(in: 0...24, using: &rng)
      let buffer =
        [UInt8](repeating: 0x20, count: lead) + [0x22] + contents + [0x22] + [UInt8](repeating: 0x7D, count: after)
      buffer.withUnsafeBytes { b in
        let found = CanonicalJSON.stringEndAndPlain(b, lead)
        let end = CanonicalJSON.stringEnd(b, lead)
        #expect(found?.end == end, "\(buffer)")
        let isPlain = !contents.contains(where: Self.isSpecial)
        if found?.plain == true { #expect(isPlain, "called plain: \(buffer)") }
        // A plain string is found in a block: in any buffer of 16 bytes or more, and in a shorter one
        // when its closing quote has 8 bytes of the buffer from it.
        if isPlain, buffer.count >= 16 || lead + 1 + contents.count + 8 <= buffer.count {
          #expect(found?.plain == true, "\(buffer)")
          #expect(found?.end == lead + contents.count + 2)
        }
      }
    }
  }
}
