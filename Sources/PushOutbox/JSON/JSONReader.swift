/// Why a JSON text was rejected, and at which byte offset.
package struct JSONParseError: Error, Sendable, Equatable {
  package var offset: Int
  package var reason: String
}

/// A strict RFC 8259 reader over UTF-8 bytes.
///
/// - Validates UTF-8 (no overlong forms, no surrogates, raw or escaped, unless paired).
/// - Limits nesting to `maxDepth`, so deep input is an error, never a stack overflow.
/// - Keeps object members in order, duplicates included, and reports whether any
///   object held a duplicate key (`sawDuplicateKey`), so callers pay for a search only then.
package struct JSONReader: ~Copyable {
  private let base: UnsafePointer<UInt8>
  private let count: Int
  private var i = 0
  private var depth = 0
  private let maxDepth: Int
  private var scratch: [UInt8] = []
  package private(set) var sawDuplicateKey = false

  package init(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int = 128) {
    self.base = bytes.baseAddress ?? UnsafePointer(bitPattern: 1)!
    self.count = bytes.count
    self.maxDepth = maxDepth
  }

  /// Parses one whole JSON text; trailing non-whitespace is an error.
  package static func parse(_ bytes: [UInt8], maxDepth: Int = 128) throws(JSONParseError) -> JSONValue {
    try bytes.withUnsafeBufferPointer { (buffer) throws(JSONParseError) -> JSONValue in
      var reader = JSONReader(buffer, maxDepth: maxDepth)
      return try reader.parseDocument()
    }
  }

  package static func parse(_ text: String, maxDepth: Int = 128) throws(JSONParseError) -> JSONValue {
    try parse(Array(text.utf8), maxDepth: maxDepth)
  }

  package mutating func parseDocument() throws(JSONParseError) -> JSONValue {
    skipWhitespace()
    let value = try parseValue()
    skipWhitespace()
    if i != count { throw fail("unexpected data after the JSON value") }
    return value
  }

  // MARK: - Values

  private mutating func parseValue() throws(JSONParseError) -> JSONValue {
    guard i < count else { throw fail("unexpected end of input") }
    switch base[i] {
    case UInt8(ascii: "{"): return try parseObject()
    case UInt8(ascii: "["): return try parseArray()
    case UInt8(ascii: "\""): return .string(try parseString())
    case UInt8(ascii: "t"): try literal("true"); return .bool(true)
    case UInt8(ascii: "f"): try literal("false"); return .bool(false)
    case UInt8(ascii: "n"): try literal("null"); return .null
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
    default: throw fail("unexpected character")
    }
  }

  private mutating func enter() throws(JSONParseError) {
    depth += 1
    if depth > maxDepth { throw fail("nesting deeper than \(maxDepth)") }
  }

  private mutating func parseObject() throws(JSONParseError) -> JSONValue {
    try enter()
    i += 1
    var members: [JSONMember] = []
    members.reserveCapacity(8)  // growing from empty reallocates three times for a typical object
    var seen: Set<String>? = nil  // built only for large objects, to keep the duplicate check linear
    skipWhitespace()
    if i < count, base[i] == UInt8(ascii: "}") {
      i += 1
      depth -= 1
      return .object(members)
    }
    while true {
      skipWhitespace()
      guard i < count, base[i] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
      let key = try parseString()
      skipWhitespace()
      guard i < count, base[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
      i += 1
      skipWhitespace()
      let value = try parseValue()
      noteKey(key, members: members, seen: &seen)
      members.append(JSONMember(key, value))
      skipWhitespace()
      guard i < count else { throw fail("unterminated object") }
      if base[i] == UInt8(ascii: ",") {
        i += 1
        continue
      }
      guard base[i] == UInt8(ascii: "}") else { throw fail("expected ',' or '}'") }
      i += 1
      depth -= 1
      return .object(members)
    }
  }

  private mutating func noteKey(_ key: String, members: [JSONMember], seen: inout Set<String>?) {
    if sawDuplicateKey { return }
    if members.count < 16 {
      sawDuplicateKey = members.contains { $0.key == key }
      return
    }
    if seen == nil { seen = Set(members.map(\.key)) }
    sawDuplicateKey = !seen!.insert(key).inserted
  }

  private mutating func parseArray() throws(JSONParseError) -> JSONValue {
    try enter()
    i += 1
    var items: [JSONValue] = []
    items.reserveCapacity(4)
    skipWhitespace()
    if i < count, base[i] == UInt8(ascii: "]") {
      i += 1
      depth -= 1
      return .array(items)
    }
    while true {
      skipWhitespace()
      items.append(try parseValue())
      skipWhitespace()
      guard i < count else { throw fail("unterminated array") }
      if base[i] == UInt8(ascii: ",") {
        i += 1
        continue
      }
      guard base[i] == UInt8(ascii: "]") else { throw fail("expected ',' or ']'") }
      i += 1
      depth -= 1
      return .array(items)
    }
  }

  private mutating func literal(_ word: StaticString) throws(JSONParseError) {
    let n = word.utf8CodeUnitCount
    guard i + n <= count else { throw fail("invalid literal") }
    for k in 0..<n where base[i + k] != word.utf8Start[k] { throw fail("invalid literal") }
    i += n
  }

  // MARK: - Numbers

  private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
    let start = i
    var negative = false
    if base[i] == UInt8(ascii: "-") {
      negative = true
      i += 1
    }
    guard i < count, isDigit(base[i]) else { throw fail("invalid number") }
    var magnitude: UInt64 = 0
    var overflow = false
    if base[i] == UInt8(ascii: "0") {
      i += 1
      if i < count, isDigit(base[i]) { throw fail("leading zero in number") }
    } else {
      while i < count, isDigit(base[i]) {
        let (m1, o1) = magnitude.multipliedReportingOverflow(by: 10)
        let (m2, o2) = m1.addingReportingOverflow(UInt64(base[i] &- 48))
        overflow = overflow || o1 || o2
        magnitude = m2
        i += 1
      }
    }
    var integral = true
    if i < count, base[i] == UInt8(ascii: ".") {
      integral = false
      i += 1
      guard i < count, isDigit(base[i]) else { throw fail("digit expected after '.'") }
      while i < count, isDigit(base[i]) { i += 1 }
    }
    if i < count, base[i] == UInt8(ascii: "e") || base[i] == UInt8(ascii: "E") {
      integral = false
      i += 1
      if i < count, base[i] == UInt8(ascii: "+") || base[i] == UInt8(ascii: "-") { i += 1 }
      guard i < count, isDigit(base[i]) else { throw fail("digit expected in exponent") }
      while i < count, isDigit(base[i]) { i += 1 }
    }
    if integral, !overflow {
      if !negative, magnitude <= UInt64(Int64.max) { return .int(Int64(magnitude)) }
      if negative, magnitude != 0, magnitude <= UInt64(Int64.max) + 1 {
        return .int(magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude))
      }
    }
    return .number(String(decoding: UnsafeBufferPointer(start: base + start, count: i - start), as: UTF8.self))
  }

  @inline(__always) private func isDigit(_ b: UInt8) -> Bool { b &- 48 < 10 }

  // MARK: - Strings

  /// Parses a string starting at its opening quote. Plain ASCII without escapes takes the fast path.
  private mutating func parseString() throws(JSONParseError) -> String {
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

  // MARK: - Helpers

  @inline(__always) private mutating func skipWhitespace() {
    while i < count {
      let b = base[i]
      guard b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 else { return }
      i += 1
    }
  }

  private func fail(_ reason: String) -> JSONParseError {
    JSONParseError(offset: i, reason: reason)
  }
}
