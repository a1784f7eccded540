// Strings: validation while reading (escapes, surrogate pairs, UTF-8), and decoding afterwards.
extension TapeBuilder {
  /// Reads a string starting at its opening quote and pushes its node; returns its flags
  /// (`JSONNode.escaped`, `.lineSeparator`), zero for text the writer would write unchanged.
  mutating func string() throws(JSONParseError) -> UInt32 {
    let node = pushNode(start: i)
    var flags: UInt32 = 0
    var k = i + 1
    while true {
      // Find the next byte that is not printable ASCII other than `"` and `\`: 8 at a time while
      // 8 remain, then one at a time.
      if k + 8 <= count {
        let special = PlainRun.specialBytes(UnsafeRawPointer(base + k).loadUnaligned(as: UInt64.self))
        if special == 0 {
          k += 8
          continue
        }
        k += special.trailingZeroBitCount >> 3
      } else {
        guard k < count else {
          i = k
          throw fail("unterminated string")
        }
        let b = base[k]
        if b >= 0x20 && b < 0x80 && b != 0x5C && b != 0x22 {
          k += 1
          continue
        }
      }
      let b = base[k]
      if b == UInt8(ascii: "\"") {
        i = k + 1
        nodes[node].end = UInt32(truncatingIfNeeded: i)
        nodes[node].aux = flags
        return flags
      }
      i = k
      if b == UInt8(ascii: "\\") {
        flags |= JSONNode.escaped
        try escape()
      } else if b < 0x20 {
        throw fail("raw control character in string")
      } else {
        if b == 0xE2, k + 2 < count, base[k + 1] == 0x80, base[k + 2] & 0xFE == 0xA8 { flags |= JSONNode.lineSeparator }
        try utf8Sequence()
      }
      k = i
    }
  }

  private mutating func escape() throws(JSONParseError) {
    guard i + 1 < count else { throw fail("unterminated escape") }
    let e = base[i + 1]
    i += 2
    switch e {
    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
      UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
      return
    case UInt8(ascii: "u"):
      let scalar = try hex4()
      if scalar >= 0xD800 && scalar <= 0xDBFF {
        guard i + 1 < count, base[i] == UInt8(ascii: "\\"), base[i + 1] == UInt8(ascii: "u") else {
          throw fail("lone surrogate escape")
        }
        i += 2
        let low = try hex4()
        guard low >= 0xDC00 && low <= 0xDFFF else { throw fail("lone surrogate escape") }
      } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
        throw fail("lone surrogate escape")
      }
    default: throw fail("invalid escape")
    }
  }

  private mutating func hex4() throws(JSONParseError) -> UInt32 {
    guard i + 4 <= count else { throw fail("short \\u escape") }
    guard let v = JSONString.hex4(base + i) else {
      while isHexDigit(base[i]) { i += 1 }  // stops at the bad digit, within the four
      throw fail("invalid hex digit in \\u escape")
    }
    i += 4
    return v
  }

  private func isHexDigit(_ b: UInt8) -> Bool {
    b &- 48 < 10 || (b | 0x20) &- 97 < 6
  }

  /// Validates one multi-byte UTF-8 sequence at `i` (`UTF8Sequence`).
  private mutating func utf8Sequence() throws(JSONParseError) {
    switch UTF8Sequence.check(UnsafeRawPointer(base + i), available: count - i) {
    case .valid(let length): i += length
    case .truncated: throw fail("truncated UTF-8")
    case .invalid: throw fail("invalid UTF-8")
    }
  }
}

/// Decoding of string text the reader has already validated.
enum JSONString {
  /// Four hex digits at `p`, or nil.
  static func hex4(_ p: UnsafePointer<UInt8>) -> UInt32? {
    var v: UInt32 = 0
    for k in 0..<4 {
      let b = p[k]
      let d: UInt8
      switch b {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): d = b - 48
      case UInt8(ascii: "a")...UInt8(ascii: "f"): d = b - 87
      case UInt8(ascii: "A")...UInt8(ascii: "F"): d = b - 55
      default: return nil
      }
      v = v << 4 | UInt32(d)
    }
    return v
  }

  /// Appends the decoded UTF-8 of validated string contents `raw` (between the quotes).
  package static func decode(_ raw: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
    guard let p = raw.baseAddress else { return }
    let n = raw.count
    var i = 0
    var run = 0
    while i < n {
      guard p[i] == UInt8(ascii: "\\") else {
        i += 1
        continue
      }
      out.append(contentsOf: UnsafeBufferPointer(start: p + run, count: i - run))
      let e = p[i + 1]
      i += 2
      switch e {
      case UInt8(ascii: "b"): out.append(0x08)
      case UInt8(ascii: "f"): out.append(0x0C)
      case UInt8(ascii: "n"): out.append(0x0A)
      case UInt8(ascii: "r"): out.append(0x0D)
      case UInt8(ascii: "t"): out.append(0x09)
      case UInt8(ascii: "u"):
        var scalar = hex4(p + i) ?? 0xFFFD
        i += 4
        if scalar >= 0xD800 && scalar <= 0xDBFF, i + 6 <= n, let low = hex4(p + i + 2) {
          scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low &- 0xDC00)
          i += 6
        }
        appendScalar(scalar, to: &out)
      default: out.append(e)  // " \ /
      }
      run = i
    }
    out.append(contentsOf: UnsafeBufferPointer(start: p + run, count: n - run))
  }

  static func appendScalar(_ v: UInt32, to out: inout [UInt8]) {
    switch v {
    case 0..<0x80:
      out.append(UInt8(v))
    case 0x80..<0x800:
      out.append(UInt8(0xC0 | v >> 6))
      out.append(UInt8(0x80 | v & 0x3F))
    case 0x800..<0x10000:
      out.append(UInt8(0xE0 | v >> 12))
      out.append(UInt8(0x80 | v >> 6 & 0x3F))
      out.append(UInt8(0x80 | v & 0x3F))
    default:
      out.append(UInt8(0xF0 | v >> 18))
      out.append(UInt8(0x80 | v >> 12 & 0x3F))
      out.append(UInt8(0x80 | v >> 6 & 0x3F))
      out.append(UInt8(0x80 | v & 0x3F))
    }
  }
}
