/// Makes item and flush ids: UUID version 7 (48-bit millisecond time, 74 random bits), as text.
///
/// Random bits come from a wyrand generator seeded by the OS, or by `--id-seed` for reproducible tests.
/// An item's id mixes the seed with the item's seq instead (`words(key:ms:counter:)`), so the store
/// can tell a generated id from its seq and time and hold none of its 16 bytes.
package struct IDGenerator: Sendable {
  private var state: UInt64
  /// The seed: the key of `words(key:ms:counter:)`.
  package let key: UInt64

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
    key = state
  }

  private mutating func next() -> UInt64 {
    state &+= 0xA076_1D64_78BD_642F
    return Self.mix(state)
  }

  private static func mix(_ x: UInt64) -> UInt64 {
    let product = x.multipliedFullWidth(by: x ^ 0xE703_7ED1_A0B4_28DB)
    return product.high ^ product.low
  }

  /// The UUIDv7 halves for the instant `ms` with the 74 random bits taken from `random` and `more`.
  private static func uuid(ms: Int64, _ random: UInt64, _ more: UInt64) -> (high: UInt64, low: UInt64) {
    let high = UInt64(UInt64(bitPattern: ms) << 16) | 0x7000 | (random & 0x0FFF)
    let low = (more & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
    return (high, low)
  }

  /// The UUIDv7 of the item numbered `counter` (its seq) at `ms`: a pure function of `key`, so a
  /// store that knows the key recomputes the id instead of holding it.
  @inline(__always)
  package static func words(key: UInt64, ms: Int64, counter: UInt64) -> (high: UInt64, low: UInt64) {
    let first = mix(key &+ counter &* 0xA076_1D64_78BD_642F)
    return uuid(ms: ms, first, mix(first ^ key ^ 0x8EBC_6AF0_9C88_C6E3))
  }

  /// Appends the 16 lowercase hex digits of `v`.
  package static func appendHex(_ v: UInt64, to out: inout [UInt8]) {
    ByteCursor.append(to: &out, capacity: 16) { cursor in
      hex8(UInt32(truncatingIfNeeded: v >> 32), to: cursor.p)
      hex8(UInt32(truncatingIfNeeded: v), to: cursor.p + 8)
      cursor.advance(by: 16)
    }
  }

  /// A new UUIDv7 string for the instant `ms` (a flush id), from the generator's stream.
  package mutating func make(ms: Int64) -> String {
    let (high, low) = Self.uuid(ms: ms, next(), next())
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

  /// Writes the 36-character text of the UUID `high`, `low` at `p`: all 32 digits at once with SSE2
  /// on x86-64 (`IDGenerator+SSE2.swift`), else 8 and 4 at a time.
  @inline(__always)
  package static func writeText(high: UInt64, low: UInt64, to p: UnsafeMutablePointer<UInt8>) {
    #if arch(x86_64)
    writeTextSSE2(high: high, low: low, to: p)
    #else
    writePortableText(high: high, low: low, to: p)
    #endif
  }

  /// `writeText` without SIMD: what other CPUs run, and what tests hold the SSE2 one to.
  @inline(__always)
  package static func writePortableText(high: UInt64, low: UInt64, to p: UnsafeMutablePointer<UInt8>) {
    hex8(UInt32(truncatingIfNeeded: high >> 32), to: p)
    p[8] = UInt8(ascii: "-")
    hex4(UInt16(truncatingIfNeeded: high >> 16), to: p + 9)
    p[13] = UInt8(ascii: "-")
    hex4(UInt16(truncatingIfNeeded: high), to: p + 14)
    p[18] = UInt8(ascii: "-")
    hex4(UInt16(truncatingIfNeeded: low >> 48), to: p + 19)
    p[23] = UInt8(ascii: "-")
    hex4(UInt16(truncatingIfNeeded: low >> 32), to: p + 24)
    hex8(UInt32(truncatingIfNeeded: low), to: p + 28)
  }

  /// The 8 lowercase hex digits of `v`, most significant first, in one store: each nibble spread
  /// into a byte of its own, then every byte turned into its digit at once.
  @inline(__always)
  private static func hex8(_ v: UInt32, to p: UnsafeMutablePointer<UInt8>) {
    var x = UInt64(v)
    x = (x | x << 16) & 0x0000_FFFF_0000_FFFF
    x = (x | x << 8) & 0x00FF_00FF_00FF_00FF
    x = (x | x << 4) & 0x0F0F_0F0F_0F0F_0F0F  // byte k holds nibble k, the least significant first
    let letters = ((x &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101  // 1 where it is 10...15
    x = x &+ 0x3030_3030_3030_3030 &+ letters &* 39  // '0' + d, or 'a' + d - 10
    UnsafeMutableRawPointer(p).storeBytes(of: x.bigEndian, as: UInt64.self)  // the top nibble at p[0]
  }

  /// The 4 lowercase hex digits of `v`, as `hex8` writes them.
  @inline(__always)
  private static func hex4(_ v: UInt16, to p: UnsafeMutablePointer<UInt8>) {
    var x = UInt32(v)
    x = (x | x << 8) & 0x00FF_00FF
    x = (x | x << 4) & 0x0F0F_0F0F
    let letters = ((x &+ 0x0606_0606) >> 4) & 0x0101_0101
    x = x &+ 0x3030_3030 &+ letters &* 39
    UnsafeMutableRawPointer(p).storeBytes(of: x.bigEndian, as: UInt32.self)
  }
}
