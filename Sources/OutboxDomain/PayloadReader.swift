/// The tolerant JSON reader behind `PayloadTree`: RFC 8259's grammar, but it records an error at the
/// byte where it occurs and goes on. A missing comma before a key is read as if it were there; any
/// other error inside an object or array skips to the next `,` or closing bracket at that depth.
/// Nesting past `maxDepth` is one error and the deep value is skipped without recursion, so depth
/// costs no stack. Invalid UTF-8 and unpaired `\u` surrogates are findings, never traps.
struct PayloadReader: ~Copyable {
  /// Payloads are shallow; deeper values are reported and skipped.
  static let maxDepth = 64
  /// After this many syntax errors, the rest of the document is not read.
  static let maxErrors = 16

  let base: UnsafePointer<UInt8>
  let count: Int
  var i = 0
  var depth = 0
  var tree = PayloadTree()
  var stopped = false

  init(_ bytes: UnsafeBufferPointer<UInt8>) {
    base = bytes.baseAddress ?? UnsafePointer(bitPattern: 1)!
    count = bytes.count
    tree.byteCount = count
  }

  mutating func document() -> PayloadTree {
    if count >= 3, base[0] == 0xEF, base[1] == 0xBB, base[2] == 0xBF { i = 3 }
    skipWhitespace()
    if i >= count {
      error(at: i, "the document is empty; a push payload is a JSON object")
      return tree
    }
    tree.root = value()
    skipWhitespace()
    if i < count && !stopped { error(at: i, "unexpected text after the JSON value") }
    return tree
  }

  // MARK: - Errors

  mutating func error(at offset: Int, _ message: String, end: Int? = nil, code: String = "json-syntax") {
    guard tree.syntax.count < Self.maxErrors else {
      stopped = true
      i = count
      return
    }
    let stop = Swift.min(Swift.max(end ?? offset + 1, offset), count)
    tree.syntax.append(
      PayloadFinding(code: code, path: "", start: Swift.min(offset, count), end: stop, message: message))
  }

  /// Skips to the next `,` or closing bracket at this depth (or a missing one's line), after an error.
  /// Returns the byte it stopped at (not consumed), or nil at the end of input.
  mutating func recover() -> UInt8? {
    var nested = 0
    while i < count && !stopped {
      let b = base[i]
      switch b {
      case UInt8(ascii: "\""):
        skipString()
        continue
      case UInt8(ascii: "{"), UInt8(ascii: "["): nested += 1
      case UInt8(ascii: "}"), UInt8(ascii: "]"):
        if nested == 0 { return b }
        nested -= 1
      case UInt8(ascii: ","):
        if nested == 0 { return b }
      default: break
      }
      i += 1
    }
    return nil
  }

  /// Skips a string token for recovery (to its closing quote or the end of its line).
  mutating func skipString() {
    i += 1
    while i < count {
      let b = base[i]
      if b == UInt8(ascii: "\\") {
        i += 2
        continue
      }
      i += 1
      if b == UInt8(ascii: "\"") || b == 0x0A { return }
    }
    i = Swift.min(i, count)
  }

  // MARK: - Values

  mutating func value() -> PayloadNode? {
    guard i < count, !stopped else {
      error(at: i, "a value was expected before the end of the document")
      return nil
    }
    switch base[i] {
    case UInt8(ascii: "{"), UInt8(ascii: "["):
      if depth >= Self.maxDepth {
        let start = i
        skipDeep()
        error(at: start, "nesting deeper than \(Self.maxDepth) levels; this value is not read", end: start + 1)
        return nil
      }
      return base[i] == UInt8(ascii: "{") ? object() : array()
    case UInt8(ascii: "\""): return string()
    case UInt8(ascii: "t"): return literal("true", .bool)
    case UInt8(ascii: "f"): return literal("false", .bool)
    case UInt8(ascii: "n"): return literal("null", .null)
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
    default:
      let (start, end) = (i, scalarEnd(i))
      error(at: start, "unexpected character; a JSON value was expected", end: end)
      return nil
    }
  }

  mutating func object() -> PayloadNode {
    var node = PayloadNode(kind: .object, start: i, end: i)
    depth += 1
    defer { depth -= 1 }
    i += 1
    var previousEnd = i
    skipWhitespace()
    if i < count, base[i] == UInt8(ascii: "}") {
      i += 1
      node.end = i
      return node
    }
    while !stopped {
      skipWhitespace()
      guard i < count else {
        error(at: i, "the object is not closed: '}' expected")
        break
      }
      guard base[i] == UInt8(ascii: "\"") else {
        let found = base[i]
        if found == UInt8(ascii: "}") {
          error(at: i, "a trailing comma is not allowed in JSON")
          i += 1
          break
        }
        error(at: i, "a member name in double quotes was expected", end: scalarEnd(i))
        if resume() { continue } else { break }
      }
      let keyStart = i
      let key = string()
      skipWhitespace()
      guard i < count, base[i] == UInt8(ascii: ":") else {
        error(at: i, "':' expected after the member name", end: i < count ? scalarEnd(i) : i)
        if resume() { continue } else { break }
      }
      i += 1
      skipWhitespace()
      guard let v = value() else {
        if resume() { continue } else { break }
      }
      node.members.append(
        PayloadMember(key: key.text, keyStart: keyStart, keyEnd: key.end, value: v, previousEnd: previousEnd))
      previousEnd = v.end
      skipWhitespace()
      if i < count, base[i] == UInt8(ascii: ",") {
        i += 1
        continue
      }
      if i < count, base[i] == UInt8(ascii: "}") {
        i += 1
        break
      }
      if i < count, base[i] == UInt8(ascii: "\"") {
        error(at: i, "',' expected between members")  // read on as if the comma were there
        continue
      }
      error(at: i, i < count ? "',' or '}' expected" : "the object is not closed: '}' expected", end: scalarEnd(i))
      if !resume() { break }
    }
    node.end = i
    return node
  }

  /// After an error in an object: true to read the next member, false when the object has ended.
  private mutating func resume() -> Bool {
    switch recover() {
    case UInt8(ascii: ",")?:
      i += 1
      return true
    case UInt8(ascii: "}")?:
      i += 1
      return false
    default: return false  // a ']' belongs to an enclosing array; the end of input ends everything
    }
  }

  mutating func array() -> PayloadNode {
    var node = PayloadNode(kind: .array, start: i, end: i)
    depth += 1
    defer { depth -= 1 }
    i += 1
    skipWhitespace()
    if i < count, base[i] == UInt8(ascii: "]") {
      i += 1
      node.end = i
      return node
    }
    while !stopped {
      skipWhitespace()
      if i < count, base[i] == UInt8(ascii: "]"), !node.elements.isEmpty {
        error(at: i, "a trailing comma is not allowed in JSON")
        i += 1
        break
      }
      if let v = value() {
        node.elements.append(v)
        skipWhitespace()
        if i < count, base[i] == UInt8(ascii: ",") {
          i += 1
          continue
        }
        if i < count, base[i] == UInt8(ascii: "]") {
          i += 1
          break
        }
        error(at: i, i < count ? "',' or ']' expected" : "the array is not closed: ']' expected", end: scalarEnd(i))
      }
      let stop = recover()
      if stop == UInt8(ascii: ",") {
        i += 1
        continue
      }
      if stop == UInt8(ascii: "]") { i += 1 }
      break
    }
    node.end = i
    return node
  }

  mutating func literal(_ word: String, _ kind: PayloadNode.Kind) -> PayloadNode? {
    let start = i
    for b in word.utf8 {
      guard i < count, base[i] == b else {
        while i < count, base[i] >= UInt8(ascii: "a"), base[i] <= UInt8(ascii: "z") { i += 1 }
        error(at: start, "not a JSON value (true, false and null are lowercase words)", end: Swift.max(i, start + 1))
        return nil
      }
      i += 1
    }
    var node = PayloadNode(kind: kind, start: start, end: i)
    node.text = word
    return node
  }

  mutating func number() -> PayloadNode? {
    let start = i
    if base[i] == UInt8(ascii: "-") { i += 1 }
    func digits(_ r: inout PayloadReader) -> Int {
      let s = r.i
      while r.i < r.count, r.base[r.i] &- 48 < 10 { r.i += 1 }
      return r.i - s
    }
    let whole = digits(&self)
    var bad: String? = whole == 0 ? "a digit was expected" : nil
    if whole > 1, base[start + (base[start] == UInt8(ascii: "-") ? 1 : 0)] == UInt8(ascii: "0") {
      bad = "a number cannot start with 0"
    }
    if bad == nil, i < count, base[i] == UInt8(ascii: ".") {
      i += 1
      if digits(&self) == 0 { bad = "a digit was expected after '.'" }
    }
    if bad == nil, i < count, base[i] | 0x20 == UInt8(ascii: "e") {
      i += 1
      if i < count, base[i] == UInt8(ascii: "+") || base[i] == UInt8(ascii: "-") { i += 1 }
      if digits(&self) == 0 { bad = "a digit was expected in the exponent" }
    }
    if let bad {
      error(at: i < count ? i : start, bad)
      return nil
    }
    var node = PayloadNode(kind: .number, start: start, end: i)
    node.text = String(decoding: UnsafeBufferPointer(start: base + start, count: i - start), as: UTF8.self)
    return node
  }

  @inline(__always) mutating func skipWhitespace() {
    while i < count {
      let b = base[i]
      guard b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 else { return }
      i += 1
    }
  }
}
