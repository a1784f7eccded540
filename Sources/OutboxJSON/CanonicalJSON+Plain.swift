/// Finding a string's end in the hot save's line (`OneScan`), and whether it is plain, with
/// `PlainRun`'s blocks.
extension CanonicalJSON {
  /// `stringEnd`, and whether the string is plain: printable ASCII without an escape, found 16 bytes
  /// at a time with SSE2 on x86-64 (`PlainRun`), the last ones by a block that ends with the buffer
  /// (a buffer under 16 bytes: 8 at a time); a string with anything else takes `stringEnd`'s full
  /// check (out of line), and is not called plain. The first block is looked at inline, where most
  /// strings end (callers in other modules inline it: `public`); the rest out of line.
  @inlinable @inline(__always)
  public static func stringEndAndPlain(_ b: UnsafeRawBufferPointer, _ start: Int) -> (end: Int, plain: Bool)? {
    let j = start &+ 1
    if j &+ PlainRun.width <= b.count, let base = b.baseAddress {
      let special = PlainRun.special(base + j)
      if special != 0 {
        let end = j &+ special.trailingZeroBitCount
        if base.load(fromByteOffset: end, as: UInt8.self) == 0x22 { return (end &+ 1, true) }
      }
    }
    return stringEndAndPlainScan(b, start)
  }

  /// `stringEndAndPlain` block after block, from the string's start.
  @inline(never) @usableFromInline
  static func stringEndAndPlainScan(_ b: UnsafeRawBufferPointer, _ start: Int) -> (end: Int, plain: Bool)? {
    var j = start + 1
    guard let base = b.baseAddress else { return stringEndNotPlain(b, start) }
    let n = b.count
    while j + PlainRun.width <= n {
      let special = PlainRun.special(base + j)
      if special == 0 {
        j += PlainRun.width
        continue
      }
      j += special.trailingZeroBitCount
      guard base.load(fromByteOffset: j, as: UInt8.self) == 0x22 else { return stringEndNotPlain(b, start) }
      return (j + 1, true)
    }
    if j < n && n >= PlainRun.width {
      // The block that ends with the buffer, its bits for the bytes before `j` shifted out.
      let special = PlainRun.special(base + (n - PlainRun.width)) >> UInt32(PlainRun.width - (n - j))
      guard special != 0 else { return stringEndNotPlain(b, start) }
      j += special.trailingZeroBitCount
      guard base.load(fromByteOffset: j, as: UInt8.self) == 0x22 else { return stringEndNotPlain(b, start) }
      return (j + 1, true)
    }
    while j + 8 <= n {
      let special = PlainRun.specialBytes(base.loadUnaligned(fromByteOffset: j, as: UInt64.self))
      if special == 0 {
        j += 8
        continue
      }
      j += special.trailingZeroBitCount >> 3
      guard base.load(fromByteOffset: j, as: UInt8.self) == 0x22 else { return stringEndNotPlain(b, start) }
      return (j + 1, true)
    }
    return stringEndNotPlain(b, start)
  }

  /// `stringEndAndPlain`'s slow path, out of line so the fast one stays small.
  @inline(never)
  private static func stringEndNotPlain(_ b: UnsafeRawBufferPointer, _ start: Int) -> (end: Int, plain: Bool)? {
    stringEnd(b, start).map { ($0, false) }
  }
}
