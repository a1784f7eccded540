import Testing

@testable import OutboxSupport

@Suite("ID text")
struct IDTextTests {
  /// The text of a UUID by a plain route: each word's digits through `String(_:radix:)`.
  static func reference(high: UInt64, low: UInt64) -> String {
    func digits(_ v: UInt64, _ n: Int) -> String {
      let text = String(v, radix: 16)
      return String(repeating: "0", count: n - text.count) + text
    }
    return digits(high >> 32, 8) + "-" + digits(high >> 16 & 0xFFFF, 4) + "-" + digits(high & 0xFFFF, 4) + "-"
      + digits(low >> 48, 4) + "-" + digits(low & 0xFFFF_FFFF_FFFF, 12)
  }

  @Test("writeText is the 8-4-4-4-12 lowercase hex of both words, for random and edge words")
  func text() {
    var rng = SeededGenerator(seed: 42)
    var words: [(UInt64, UInt64)] = [(0, 0), (.max, .max), (0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210)]
    for _ in 0..<20_000 { words.append((rng.next(), rng.next())) }
    for (high, low) in words {
      var bytes = [UInt8](repeating: 0, count: IDGenerator.length)
      bytes.withUnsafeMutableBufferPointer { IDGenerator.writeText(high: high, low: low, to: $0.baseAddress!) }
      #expect(String(decoding: bytes, as: UTF8.self) == Self.reference(high: high, low: low))
      var portable = [UInt8](repeating: 0, count: IDGenerator.length)
      portable.withUnsafeMutableBufferPointer {
        IDGenerator.writePortableText(high: high, low: low, to: $0.baseAddress!)
      }
      #expect(portable == bytes)
    }
  }
}
