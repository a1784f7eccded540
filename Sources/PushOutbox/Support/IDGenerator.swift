/// Makes item and flush ids: UUID version 7 (48-bit millisecond time, 74 random bits), as text.
///
/// Random bits come from a wyrand generator seeded by the OS, or by `--id-seed` for reproducible tests.
package struct IDGenerator: Sendable {
  private var state: UInt64

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

  /// A new UUIDv7 string for the instant `ms`.
  package mutating func make(ms: Int64) -> String {
    let high = UInt64(UInt64(bitPattern: ms) << 16) | 0x7000 | (next() & 0x0FFF)
    let low = (next() & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
    let hex: StaticString = "0123456789abcdef"
    return String(unsafeUninitializedCapacity: 36) { buffer in
      var n = 0
      hex.withUTF8Buffer { digits in
        for (word, shiftStart) in [(high, 60), (low, 60)] {
          var shift = shiftStart
          while shift >= 0 {
            if n == 8 || n == 13 || n == 18 || n == 23 {
              buffer[n] = UInt8(ascii: "-")
              n += 1
            }
            buffer[n] = digits[Int((word >> UInt64(shift)) & 0xF)]
            n += 1
            shift -= 4
          }
        }
      }
      return n
    }
  }
}
