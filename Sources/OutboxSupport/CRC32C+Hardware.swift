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
}
#endif
