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
  let base: UnsafePointer<UInt8>
  let count: Int
  var i = 0
  private var depth = 0
  private let maxDepth: Int
  var scratch: [UInt8] = []
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

  @inline(__always) func isDigit(_ b: UInt8) -> Bool { b &- 48 < 10 }

  // MARK: - Helpers

  @inline(__always) private mutating func skipWhitespace() {
    while i < count {
      let b = base[i]
      guard b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 else { return }
      i += 1
    }
  }

  func fail(_ reason: String) -> JSONParseError {
    JSONParseError(offset: i, reason: reason)
  }
}
