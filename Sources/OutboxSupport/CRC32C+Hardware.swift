#if arch(x86_64)
internal import _Builtin_intrinsics.intel

extension CRC32C {
  /// CRC-32C with the SSE4.2 `crc32` instruction, eight bytes at a time, four words per turn of the
  /// loop (its bookkeeping was half the instructions of a one-word loop; the `crc32` chain is the same).
  static func hardware(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32) -> UInt32 {
    guard let base = bytes.baseAddress else { return crc }
    var c = UInt64(~crc)
    var i = 0
    let n = bytes.count
    while i + 32 <= n {
      c = _mm_crc32_u64(c, base.loadUnaligned(fromByteOffset: i, as: UInt64.self))
      c = _mm_crc32_u64(c, base.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self))
      c = _mm_crc32_u64(c, base.loadUnaligned(fromByteOffset: i + 16, as: UInt64.self))
      c = _mm_crc32_u64(c, base.loadUnaligned(fromByteOffset: i + 24, as: UInt64.self))
      i += 32
    }
    while i + 8 <= n {
      c = _mm_crc32_u64(c, base.loadUnaligned(fromByteOffset: i, as: UInt64.self))
      i += 8
    }
    var c32 = UInt32(truncatingIfNeeded: c)
    while i < n {
      c32 = _mm_crc32_u8(c32, base.load(fromByteOffset: i, as: UInt8.self))
      i += 1
    }
    return ~c32
  }

  /// Three checksums at once, their `crc32` chains interleaved: each instruction waits about three
  /// cycles for the one before it in its chain, so three chains run in the time of one.
  static func hardware(
    _ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer, _ c: UnsafeRawBufferPointer
  ) -> (UInt32, UInt32, UInt32) {
    guard let pa = a.baseAddress, let pb = b.baseAddress, let pc = c.baseAddress else {
      return (hardware(a, continuing: 0), hardware(b, continuing: 0), hardware(c, continuing: 0))
    }
    var (ca, cb, cc) = (UInt64(UInt32.max), UInt64(UInt32.max), UInt64(UInt32.max))
    let common = min(a.count, b.count, c.count) & ~7
    var i = 0
    while i < common {
      ca = _mm_crc32_u64(ca, pa.loadUnaligned(fromByteOffset: i, as: UInt64.self))
      cb = _mm_crc32_u64(cb, pb.loadUnaligned(fromByteOffset: i, as: UInt64.self))
      cc = _mm_crc32_u64(cc, pc.loadUnaligned(fromByteOffset: i, as: UInt64.self))
      i += 8
    }
    // The rest of each, one chain at a time (`continuing` takes the running value un-negated).
    return (
      hardware(UnsafeRawBufferPointer(rebasing: a[i...]), continuing: ~UInt32(truncatingIfNeeded: ca)),
      hardware(UnsafeRawBufferPointer(rebasing: b[i...]), continuing: ~UInt32(truncatingIfNeeded: cb)),
      hardware(UnsafeRawBufferPointer(rebasing: c[i...]), continuing: ~UInt32(truncatingIfNeeded: cc))
    )
  }
}
#endif
