/// RFC 3629's table of well-formed multi-byte UTF-8 sequences (no overlong form, no UTF-16
/// surrogate, nothing past U+10FFFF): one home for the reader and the canonical-text check.
enum UTF8Sequence {
  enum Verdict: Equatable {
    case valid(length: Int)
    /// The lead byte asks for more bytes than there are.
    case truncated
    case invalid
  }

  /// The sequence whose lead byte is at `p`, with `available` bytes readable from `p` on.
  static func check(_ p: UnsafeRawPointer, available: Int) -> Verdict {
    let lead = p.load(as: UInt8.self)
    let length: Int
    var low: UInt8 = 0x80
    var high: UInt8 = 0xBF
    switch lead {
    case 0xC2...0xDF: length = 2
    case 0xE0: (length, low) = (3, 0xA0)
    case 0xE1...0xEC, 0xEE...0xEF: length = 3
    case 0xED: (length, high) = (3, 0x9F)  // excludes UTF-16 surrogates
    case 0xF0: (length, low) = (4, 0x90)
    case 0xF1...0xF3: length = 4
    case 0xF4: (length, high) = (4, 0x8F)
    default: return .invalid
    }
    guard length <= available else { return .truncated }
    let second = p.load(fromByteOffset: 1, as: UInt8.self)
    guard second >= low && second <= high else { return .invalid }
    for k in 2..<max(2, length) where p.load(fromByteOffset: k, as: UInt8.self) & 0xC0 != 0x80 { return .invalid }
    return .valid(length: length)
  }
}
