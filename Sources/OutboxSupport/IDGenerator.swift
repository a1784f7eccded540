#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Makes item and flush ids: UUID version 7 (48-bit millisecond time, 74 random bits), as text.
///
/// Random bits come from a wyrand generator seeded by the OS, or by `--id-seed` for reproducible tests.
package struct IDGenerator: Sendable {
  private var state: UInt64

  /// The length of every id `make` returns.
  package static let length = 36

  package init(seed: UInt64?) {
    if let seed {
      state = seed
    } else {
      var s: UInt64 = 0
      let fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
      if fd >= 0 {
        _ = withUnsafeMutableBytes(of: &s) { posixRead(fd, $0.baseAddress!, $0.count) }
        close(fd)
      }
      state = s ^ UInt64(truncatingIfNeeded: Clock.system.now()) ^ UInt64(getpid()) << 48
    }
  }

  private mutating func next() -> UInt64 {
    state &+= 0xA076_1D64_78BD_642F
    let product = state.multipliedFullWidth(by: state ^ 0xE703_7ED1_A0B4_28DB)
    return product.high ^ product.low
  }

  /// A new UUIDv7 for the instant `ms`, as its two 64-bit halves.
  package mutating func makeWords(ms: Int64) -> (high: UInt64, low: UInt64) {
    let high = UInt64(UInt64(bitPattern: ms) << 16) | 0x7000 | (next() & 0x0FFF)
    let low = (next() & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
    return (high, low)
  }

  /// A new UUIDv7 string for the instant `ms`.
  package mutating func make(ms: Int64) -> String {
    let (high, low) = makeWords(ms: ms)
    var out: [UInt8] = []
    Self.appendText(high: high, low: low, to: &out)
    return String(decoding: out, as: UTF8.self)
  }

  /// Appends the 36-character text of the UUID `high`, `low` (no quotes).
  package static func appendText(high: UInt64, low: UInt64, to out: inout [UInt8]) {
    ByteCursor.append(to: &out, capacity: length) { cursor in
      writeText(high: high, low: low, to: cursor.p)
      cursor.advance(by: length)
    }
  }

  /// Writes the 36-character text of the UUID `high`, `low` at `p`.
  @inline(__always)
  package static func writeText(high: UInt64, low: UInt64, to p: UnsafeMutablePointer<UInt8>) {
    hex(high >> 32, digits: 8, to: p)
    p[8] = UInt8(ascii: "-")
    hex(high >> 16, digits: 4, to: p + 9)
    p[13] = UInt8(ascii: "-")
    hex(high, digits: 4, to: p + 14)
    p[18] = UInt8(ascii: "-")
    hex(low >> 48, digits: 4, to: p + 19)
    p[23] = UInt8(ascii: "-")
    hex(low, digits: 12, to: p + 24)
  }

  /// Writes the low `digits` hex digits of `word`, lowercase, most significant first.
  @inline(__always)
  private static func hex(_ word: UInt64, digits: Int, to p: UnsafeMutablePointer<UInt8>) {
    var w = word
    var k = digits
    while k > 0 {
      k -= 1
      let d = UInt8(truncatingIfNeeded: w & 0xF)
      p[k] = d < 10 ? d &+ 48 : d &+ 87
      w >>= 4
    }
  }
}
