/// Strings for `PayloadReader`: escapes decoded, UTF-8 checked, an unpaired surrogate or a bad byte
/// reported (and read as U+FFFD), a raw line break ending an unterminated string.
extension PayloadReader {
  mutating func string() -> PayloadNode {
    let start = i
    i += 1
    if let node = plainString(start) { return node }
    var scalars = String.UnicodeScalarView()
    var runStart = i
    func flush(_ r: inout PayloadReader, _ scalars: inout String.UnicodeScalarView, upTo end: Int) {
      guard end > runStart else { return }
      let run = UnsafeBufferPointer(start: r.base + runStart, count: end - runStart)
      scalars.append(contentsOf: String(decoding: run, as: UTF8.self).unicodeScalars)
    }
    while true {
      guard i < count else {
        flush(&self, &scalars, upTo: i)
        error(at: start, "the string is not closed: '\"' expected", end: i)
        break
      }
      let b = base[i]
      if b == UInt8(ascii: "\"") {
        flush(&self, &scalars, upTo: i)
        i += 1
        break
      }
      if b == 0x0A || b == 0x0D {
        flush(&self, &scalars, upTo: i)
        error(at: start, "the string is not closed before the end of its line", end: i)
        break
      }
      if b < 0x20 {
        flush(&self, &scalars, upTo: i)
        error(at: i, "a control character must be escaped in a JSON string (\\u\(hex4(UInt16(b))))")
        i += 1
        runStart = i
        continue
      }
      if b == UInt8(ascii: "\\") {
        flush(&self, &scalars, upTo: i)
        escape(into: &scalars)
        runStart = i
        continue
      }
      if b >= 0x80 {
        let end = validScalarEnd(i)
        if end == nil {
          flush(&self, &scalars, upTo: i)
          let bad = scalarEnd(i)
          tree.encoding.append(
            PayloadFinding(
              code: "invalid-utf8", path: "", start: i, end: bad, message: "bytes that are not UTF-8 in a string"))
          scalars.append("\u{FFFD}")
          i = bad
          runStart = i
          continue
        }
        i = end!
        continue
      }
      i += 1
    }
    var node = PayloadNode(kind: .string, start: start, end: i)
    node.text = String(scalars)
    return node
  }

  /// The common string: no escape, no control byte, valid UTF-8, closed on its line. Read in one
  /// pass into one `String`; nil (with `i` unchanged) for anything else, which `string()` reads.
  private mutating func plainString(_ start: Int) -> PayloadNode? {
    var j = i
    while j < count {
      let b = base[j]
      if b == UInt8(ascii: "\"") {
        var node = PayloadNode(kind: .string, start: start, end: j + 1)
        node.text = String(decoding: UnsafeBufferPointer(start: base + i, count: j - i), as: UTF8.self)
        i = j + 1
        return node
      }
      if b == UInt8(ascii: "\\") || b < 0x20 { return nil }
      if b < 0x80 {
        j += 1
      } else {
        guard let end = validScalarEnd(j) else { return nil }
        j = end
      }
    }
    return nil
  }

  /// One escape at `i` (the backslash); appends what it stands for.
  private mutating func escape(into scalars: inout String.UnicodeScalarView) {
    let start = i
    guard i + 1 < count else {
      i = count
      error(at: start, "an escape was cut off by the end of the document")
      return
    }
    let c = base[i + 1]
    i += 2
    switch c {
    case UInt8(ascii: "\""): scalars.append("\"")
    case UInt8(ascii: "\\"): scalars.append("\\")
    case UInt8(ascii: "/"): scalars.append("/")
    case UInt8(ascii: "b"): scalars.append("\u{08}")
    case UInt8(ascii: "f"): scalars.append("\u{0C}")
    case UInt8(ascii: "n"): scalars.append("\n")
    case UInt8(ascii: "r"): scalars.append("\r")
    case UInt8(ascii: "t"): scalars.append("\t")
    case UInt8(ascii: "u"):
      guard let unit = hex(at: i) else {
        error(at: start, "\\u must be followed by four hex digits", end: Swift.min(i + 4, count))
        return
      }
      i += 4
      if unit >= 0xD800 && unit < 0xDC00, i + 1 < count, base[i] == UInt8(ascii: "\\"),
        base[i + 1] == UInt8(ascii: "u"),
        let low = hex(at: i + 2), low >= 0xDC00 && low < 0xE000
      {
        i += 6
        let value = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
        scalars.append(Unicode.Scalar(value) ?? "\u{FFFD}")
      } else if unit >= 0xD800 && unit < 0xE000 {
        tree.encoding.append(
          PayloadFinding(
            code: "lone-surrogate", path: "", start: start, end: i,
            message: "\\u\(hex4(unit)) is half of a surrogate pair without its other half; it is not valid UTF-8"))
        scalars.append("\u{FFFD}")
      } else {
        scalars.append(Unicode.Scalar(unit) ?? "\u{FFFD}")
      }
    default:
      error(at: start, "unknown escape; JSON has \\\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX", end: scalarEnd(i - 1))
    }
  }

  private func hex(at offset: Int) -> UInt16? {
    guard offset + 4 <= count else { return nil }
    var value: UInt16 = 0
    for k in 0..<4 {
      let b = base[offset + k]
      let digit: UInt8
      switch b {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - 48
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - 87
      case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - 55
      default: return nil
      }
      value = value << 4 | UInt16(digit)
    }
    return value
  }

  /// The end of a valid UTF-8 sequence of 2–4 bytes at `offset`, or nil (overlong, surrogate, cut off).
  func validScalarEnd(_ offset: Int) -> Int? {
    let lead = base[offset]
    let length: Int
    var low: UInt8 = 0x80, high: UInt8 = 0xBF
    switch lead {
    case 0xC2...0xDF: length = 2
    case 0xE0: length = 3; low = 0xA0
    case 0xE1...0xEC, 0xEE...0xEF: length = 3
    case 0xED: length = 3; high = 0x9F
    case 0xF0: length = 4; low = 0x90
    case 0xF1...0xF3: length = 4
    case 0xF4: length = 4; high = 0x8F
    default: return nil
    }
    guard offset + length <= count else { return nil }
    let second = base[offset + 1]
    guard second >= low && second <= high else { return nil }
    for k in 2..<length where base[offset + k] & 0xC0 != 0x80 { return nil }
    return offset + length
  }
}

/// Four upper-case hex digits.
func hex4(_ v: UInt16) -> String {
  let digits = Array("0123456789ABCDEF".utf8)
  return String(decoding: [12, 8, 4, 0].map { digits[Int(v >> UInt16($0)) & 0xF] }, as: UTF8.self)
}

/// Skipping what is not read.
extension PayloadReader {
  /// Skips a value nested too deep: brackets counted in a loop, strings skipped.
  mutating func skipDeep() {
    var nested = 0
    while i < count {
      let b = base[i]
      if b == UInt8(ascii: "\"") {
        skipString()
        continue
      }
      i += 1
      if b == UInt8(ascii: "{") || b == UInt8(ascii: "[") { nested += 1 }
      if b == UInt8(ascii: "}") || b == UInt8(ascii: "]") {
        nested -= 1
        if nested == 0 { return }
      }
    }
  }

  /// The end of the UTF-8 sequence starting at `offset` (one byte when it is not a valid lead).
  func scalarEnd(_ offset: Int) -> Int {
    guard offset < count else { return offset }
    let lead = base[offset]
    let length = lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : lead < 0xF8 ? 4 : 1
    var end = offset + 1
    while end < Swift.min(offset + length, count), base[end] & 0xC0 == 0x80 { end += 1 }
    return end
  }
}
