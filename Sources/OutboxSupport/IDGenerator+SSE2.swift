#if arch(x86_64)
internal import _Builtin_intrinsics.intel

extension IDGenerator {
  /// `writeText` with SSE2 (in every x86-64 CPU): the 16 bytes split into 32 nibbles in two
  /// registers, each turned into its digit at once, then stored around the four dashes.
  @inline(__always)
  static func writeTextSSE2(high: UInt64, low: UInt64, to p: UnsafeMutablePointer<UInt8>) {
    // Memory order: `high`'s bytes, most significant first, then `low`'s.
    let bytes = _mm_set_epi64x(Int64(bitPattern: low.byteSwapped), Int64(bitPattern: high.byteSwapped))
    let nibble = _mm_set1_epi8(0x0F)
    let tops = _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble)
    let bottoms = _mm_and_si128(bytes, nibble)
    let first = digits(_mm_unpacklo_epi8(tops, bottoms))  // digits 0...15 (of `high`)
    let second = digits(_mm_unpackhi_epi8(tops, bottoms))  // digits 16...31 (of `low`)
    let f0 = UInt64(bitPattern: _mm_cvtsi128_si64(first))  // digits 0...7, the first in the low byte
    let f1 = UInt64(bitPattern: _mm_cvtsi128_si64(_mm_unpackhi_epi64(first, first)))  // digits 8...15
    let s0 = UInt64(bitPattern: _mm_cvtsi128_si64(second))  // digits 16...23
    let s1 = UInt64(bitPattern: _mm_cvtsi128_si64(_mm_unpackhi_epi64(second, second)))  // digits 24...31
    let raw = UnsafeMutableRawPointer(p)
    raw.storeBytes(of: f0, as: UInt64.self)
    raw.storeBytes(of: UInt8(ascii: "-"), toByteOffset: 8, as: UInt8.self)
    raw.storeBytes(of: UInt32(truncatingIfNeeded: f1), toByteOffset: 9, as: UInt32.self)
    raw.storeBytes(of: UInt8(ascii: "-"), toByteOffset: 13, as: UInt8.self)
    raw.storeBytes(of: UInt32(truncatingIfNeeded: f1 >> 32), toByteOffset: 14, as: UInt32.self)
    raw.storeBytes(of: UInt8(ascii: "-"), toByteOffset: 18, as: UInt8.self)
    raw.storeBytes(of: UInt32(truncatingIfNeeded: s0), toByteOffset: 19, as: UInt32.self)
    raw.storeBytes(of: UInt8(ascii: "-"), toByteOffset: 23, as: UInt8.self)
    raw.storeBytes(of: UInt32(truncatingIfNeeded: s0 >> 32), toByteOffset: 24, as: UInt32.self)
    raw.storeBytes(of: s1, toByteOffset: 28, as: UInt64.self)
  }

  /// Each byte (0...15) as its lowercase hex digit: '0' + d, and 39 more for 10...15 ('a' - '0' - 10).
  @inline(__always)
  private static func digits(_ x: __m128i) -> __m128i {
    let letters = _mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8(9)), _mm_set1_epi8(39))
    return _mm_add_epi8(_mm_add_epi8(x, _mm_set1_epi8(0x30)), letters)
  }
}
#endif
