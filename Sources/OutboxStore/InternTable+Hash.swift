extension InternTable {
  /// A seeded multiply-mix hash, eight bytes at a time: the one `intern` uses.
  static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt32 { hash(bytes, seed: seed) }

  /// `hash` with the seed read once by the caller (reading the lazy global costs a call each time).
  @inline(__always)
  static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64) -> UInt32 {
    let n = bytes.count
    var h = seed ^ UInt64(truncatingIfNeeded: n)
    var tail: UInt64 = 0
    if let p = bytes.baseAddress {
      var i = 0
      while i &+ 8 <= n {
        h = (h ^ p.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0x9E37_79B9_7F4A_7C15
        h ^= h >> 29
        i &+= 8
      }
      if i < n && n >= 8 {  // the last eight bytes, overlapping the words before
        tail = p.loadUnaligned(fromByteOffset: n &- 8, as: UInt64.self)
      } else {
        while i < n {
          tail = tail << 8 | UInt64(p.load(fromByteOffset: i, as: UInt8.self))
          i &+= 1
        }
      }
    }
    h = (h ^ tail) &* 0x9E37_79B9_7F4A_7C15
    h ^= h >> 32
    return UInt32(truncatingIfNeeded: h)
  }
}
