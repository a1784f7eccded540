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

  /// A decimal number (at most 20 bytes), two digits per division by 100 (the replies of saves
  /// write three: the request id, the seq and the pending count).
  @inlinable public mutating func put(decimal value: UInt64) {
    var digits = 1
    var power: UInt64 = 10
    while digits < 20 && value >= power {
      digits += 1
      power &*= 10
    }
    var v = value
    var k = digits
    while k >= 2 {
      let pair = v % 100
      v /= 100
      k -= 2
      let tens = pair / 10
      p[k] = UInt8(truncatingIfNeeded: tens) &+ 48
      p[k + 1] = UInt8(truncatingIfNeeded: pair &- tens &* 10) &+ 48
    }
    if k == 1 { p[0] = UInt8(truncatingIfNeeded: v) &+ 48 }
    p += digits
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
