#if arch(x86_64)
public import _Builtin_intrinsics.intel
#endif

/// Sixteen bytes at a time, the bytes that end a plain run of string contents: a quote, a backslash,
/// a control byte or non-ASCII (`CanonicalJSON.stringEndAndPlain`). SSE2, which every x86-64 CPU
/// has, on x86-64; elsewhere two 8-byte words of `specialBytes`.
public enum PlainRun {
  @inlinable public static var width: Int { 16 }

  /// A bit per byte of the 16 at `p` that is special, bit k for byte k; 0 when none is.
  @inlinable @inline(__always)
  public static func special(_ p: UnsafeRawPointer) -> UInt32 {
    #if arch(x86_64)
    let v = p.loadUnaligned(as: __m128i.self)
    let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x22))
    let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x5C))
    // Signed: bytes 0x80 and above are negative, so below 0x20 means a control byte or non-ASCII.
    let low = _mm_cmplt_epi8(v, _mm_set1_epi8(0x20))
    return UInt32(truncatingIfNeeded: _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), low)))
    #else
    return portable(p)
    #endif
  }

  /// `special` without SIMD: what other CPUs run, and what tests hold the SSE2 one to.
  @inlinable @inline(__always)
  public static func portable(_ p: UnsafeRawPointer) -> UInt32 {
    let first = specialBytes(p.loadUnaligned(as: UInt64.self))
    let second = specialBytes(p.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
    return UInt32(truncatingIfNeeded: highBits(first)) | UInt32(truncatingIfNeeded: highBits(second)) << 8
  }

  /// The high bit of each byte of `w` that is a quote, a backslash, a control byte or non-ASCII, exact
  /// for every byte (SWAR on the low seven bits, whose sums never carry into the next byte): the block
  /// that ends a buffer shifts out the bytes before a string, and a borrow from one of those must not
  /// mark a byte after it.
  @inlinable @inline(__always)
  public static func specialBytes(_ w: UInt64) -> UInt64 {
    let low7: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
    let x = w & low7
    let control = ~(x &+ 0x6060_6060_6060_6060)  // the sum's high bit is clear where x < 0x20
    let quote = ~((x ^ 0x2222_2222_2222_2222) &+ low7)  // clear where x == 0x22
    let backslash = ~((x ^ 0x5C5C_5C5C_5C5C_5C5C) &+ low7)  // clear where x == 0x5C
    return (w | control | quote | backslash) & 0x8080_8080_8080_8080
  }

  /// The high bit of each byte of `w`, gathered into 8 bits (byte k's to bit k) by one multiply:
  /// each bit lands on its own place in the top byte, with no carries between them.
  @inlinable @inline(__always)
  static func highBits(_ w: UInt64) -> UInt64 {
    ((w >> 7) &* 0x0102_0408_1020_4080) >> 56
  }
}
