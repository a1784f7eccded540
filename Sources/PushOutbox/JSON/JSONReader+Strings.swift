// Strings: escapes, surrogate pairs and UTF-8 validation for `JSONReader`.
extension JSONReader {
  /// Parses a string starting at its opening quote. Plain ASCII without escapes takes the fast path.
  mutating func parseString() throws(JSONParseError) -> String {
    i += 1
    let start = i
    while i < count {
      let b = base[i]
      if b == UInt8(ascii: "\"") {
        let s = String(decoding: UnsafeBufferPointer(start: base + start, count: i - start), as: UTF8.self)
        i += 1
        return s
      }
      if b == UInt8(ascii: "\\") || b < 0x20 || b >= 0x80 { break }
      i += 1
    }
    return try parseStringSlow(from: start)
  }

  private mutating func parseStringSlow(from start: Int) throws(JSONParseError) -> String {
    scratch.removeAll(keepingCapacity: true)
    scratch.append(contentsOf: UnsafeBufferPointer(start: base + start, count: i - start))
    while i < count {
      let b = base[i]
      switch b {
      case UInt8(ascii: "\""):
        i += 1
        return String(decoding: scratch, as: UTF8.self)
      case UInt8(ascii: "\\"):
        try parseEscape()
      case 0..<0x20:
        throw fail("raw control character in string")
      case 0..<0x80:
        scratch.append(b)
        i += 1
      default:
        try copyUTF8Sequence()
      }
    }
    throw fail("unterminated string")
  }

  private mutating func parseEscape() throws(JSONParseError) {
    guard i + 1 < count else { throw fail("unterminated escape") }
    let e = base[i + 1]
    i += 2
    switch e {
    case UInt8(ascii: "\""): scratch.append(0x22)
    case UInt8(ascii: "\\"): scratch.append(0x5C)
    case UInt8(ascii: "/"): scratch.append(0x2F)
    case UInt8(ascii: "b"): scratch.append(0x08)
    case UInt8(ascii: "f"): scratch.append(0x0C)
    case UInt8(ascii: "n"): scratch.append(0x0A)
    case UInt8(ascii: "r"): scratch.append(0x0D)
    case UInt8(ascii: "t"): scratch.append(0x09)
    case UInt8(ascii: "u"): try parseUnicodeEscape()
    default: throw fail("invalid escape")
    }
  }

  private mutating func parseUnicodeEscape() throws(JSONParseError) {
    var scalar = try hex4()
    if scalar >= 0xD800 && scalar <= 0xDBFF {
      guard i + 1 < count, base[i] == UInt8(ascii: "\\"), base[i + 1] == UInt8(ascii: "u") else {
        throw fail("lone surrogate escape")
      }
      i += 2
      let low = try hex4()
      guard low >= 0xDC00 && low <= 0xDFFF else { throw fail("lone surrogate escape") }
      scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
    } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
      throw fail("lone surrogate escape")
    }
    appendScalar(scalar)
  }

  private mutating func hex4() throws(JSONParseError) -> UInt32 {
    guard i + 4 <= count else { throw fail("short \\u escape") }
    var v: UInt32 = 0
    for _ in 0..<4 {
      let b = base[i]
      let d: UInt8
      switch b {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): d = b - 48
      case UInt8(ascii: "a")...UInt8(ascii: "f"): d = b - 87
      case UInt8(ascii: "A")...UInt8(ascii: "F"): d = b - 55
      default: throw fail("invalid hex digit in \\u escape")
      }
      v = v << 4 | UInt32(d)
      i += 1
    }
    return v
  }

  private mutating func appendScalar(_ v: UInt32) {
    switch v {
    case 0..<0x80:
      scratch.append(UInt8(v))
    case 0x80..<0x800:
      scratch.append(UInt8(0xC0 | v >> 6))
      scratch.append(UInt8(0x80 | v & 0x3F))
    case 0x800..<0x10000:
      scratch.append(UInt8(0xE0 | v >> 12))
      scratch.append(UInt8(0x80 | v >> 6 & 0x3F))
      scratch.append(UInt8(0x80 | v & 0x3F))
    default:
      scratch.append(UInt8(0xF0 | v >> 18))
      scratch.append(UInt8(0x80 | v >> 12 & 0x3F))
      scratch.append(UInt8(0x80 | v >> 6 & 0x3F))
      scratch.append(UInt8(0x80 | v & 0x3F))
    }
  }

  /// Validates one multi-byte UTF-8 sequence at `i` (RFC 3629 table) and copies it.
  private mutating func copyUTF8Sequence() throws(JSONParseError) {
    let b0 = base[i]
    let length: Int
    var lo: UInt8 = 0x80
    var hi: UInt8 = 0xBF
    switch b0 {
    case 0xC2...0xDF: length = 2
    case 0xE0: length = 3; lo = 0xA0
    case 0xE1...0xEC, 0xEE...0xEF: length = 3
    case 0xED: length = 3; hi = 0x9F  // excludes UTF-16 surrogates
    case 0xF0: length = 4; lo = 0x90
    case 0xF1...0xF3: length = 4
    case 0xF4: length = 4; hi = 0x8F
    default: throw fail("invalid UTF-8")
    }
    guard i + length <= count else { throw fail("truncated UTF-8") }
    let b1 = base[i + 1]
    guard b1 >= lo && b1 <= hi else { throw fail("invalid UTF-8") }
    for k in 2..<max(2, length) where base[i + k] & 0xC0 != 0x80 { throw fail("invalid UTF-8") }
    scratch.append(contentsOf: UnsafeBufferPointer(start: base + i, count: length))
    i += length
  }
}
