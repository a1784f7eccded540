/// Writes bytes through a pointer into memory sized beforehand: no capacity checks per piece.
///
/// The caller reserves enough room (see each use) and reads `count` afterwards.
public struct ByteCursor {
  public let start: UnsafeMutablePointer<UInt8>
  public var p: UnsafeMutablePointer<UInt8>

  @inlinable public init(_ start: UnsafeMutablePointer<UInt8>) {
    self.start = start
    self.p = start
  }

  /// Bytes written so far.
  @inlinable public var count: Int { p - start }

  /// Moves past `n` bytes written through `p` directly.
  @inlinable @inline(__always)
  public mutating func advance(by n: Int) { p += n }

  @inlinable @inline(__always)
  public mutating func put(_ byte: UInt8) {
    p.initialize(to: byte)
    p += 1
  }

  @inlinable @inline(__always)
  public mutating func put(_ text: StaticString) {
    put(text.utf8Start, text.utf8CodeUnitCount)
  }

  @inlinable @inline(__always)
  public mutating func put(_ bytes: UnsafePointer<UInt8>, _ n: Int) {
    p.initialize(from: bytes, count: n)
    p += n
  }

  @inlinable public mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
    if let base = bytes.baseAddress { put(base, bytes.count) }
  }

  /// A decimal number (at most 20 bytes). The digit count comes from the bit length (one comparison
  /// with a power of ten), then two digits per division by 100, copied from a table of the pairs
  /// (the replies of saves write three numbers: the request id, the seq and the pending count).
  @inlinable public mutating func put(decimal value: UInt64) {
    let digits = Self.decimalDigits(value)
    var v = value
    var k = digits
    let pairs = UnsafeRawPointer(Self.digitPairs.utf8Start)
    while k >= 2 {
      let pair = Int(truncatingIfNeeded: v % 100)
      v /= 100
      k -= 2
      UnsafeMutableRawPointer(p + k).storeBytes(
        of: pairs.loadUnaligned(fromByteOffset: 2 * pair, as: UInt16.self), as: UInt16.self)
    }
    if k == 1 { p[0] = UInt8(truncatingIfNeeded: v) &+ 48 }
    p += digits
  }

  /// "00" to "99", one pair after another.
  @usableFromInline static let digitPairs: StaticString = """
    00010203040506070809101112131415161718192021222324252627282930313233343536373839\
    40414243444546474849505152535455565758596061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899
    """

  /// The count of decimal digits of `value` (1 for 0). `(bits · 1233) >> 12` is ⌊bits · log10 2⌋: the
  /// digits less one of the smallest number of that bit length; one more when `value` reaches the
  /// next power of ten (`| 1` changes no comparison with an even power, and makes 0 count as 1).
  @inlinable @inline(__always) static func decimalDigits(_ value: UInt64) -> Int {
    let floor = ((64 - (value | 1).leadingZeroBitCount) &* 1233) >> 12
    return floor &+ ((value | 1) < powerOfTen(floor) ? 0 : 1)
  }

  /// 10^n for n in 0...19.
  @inlinable @inline(__always) static func powerOfTen(_ n: Int) -> UInt64 {
    switch n {
    case 0: 1
    case 1: 10
    case 2: 100
    case 3: 1000
    case 4: 10000
    case 5: 100_000
    case 6: 1_000_000
    case 7: 10_000_000
    case 8: 100_000_000
    case 9: 1_000_000_000
    case 10: 10_000_000_000
    case 11: 100_000_000_000
    case 12: 1_000_000_000_000
    case 13: 10_000_000_000_000
    case 14: 100_000_000_000_000
    case 15: 1_000_000_000_000_000
    case 16: 10_000_000_000_000_000
    case 17: 100_000_000_000_000_000
    case 18: 1_000_000_000_000_000_000
    default: 10_000_000_000_000_000_000
    }
  }

  /// Runs `body` with a cursor over room for `capacity` more bytes at the end of `out`, which then
  /// holds what it wrote: written in place, with one capacity check.
  @inlinable @inline(__always)
  public static func append(to out: inout [UInt8], capacity: Int, _ body: (inout ByteCursor) -> Void) {
    out.append(addingCapacity: capacity) { span in
      span.withUnsafeMutableBufferPointer { buffer, initialized in
        var cursor = ByteCursor(buffer.baseAddress! + initialized)
        body(&cursor)
        precondition(cursor.count <= capacity)
        initialized += cursor.count
      }
    }
  }
}
