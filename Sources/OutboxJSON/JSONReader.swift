/// Why a JSON text was rejected, and at which byte offset.
package struct JSONParseError: Error, Sendable, Equatable {
  package var offset: Int
  package var reason: String
  /// Set when a top-level array had more than `maxBatch` members; the read stopped there.
  package var batchLimit: Int? = nil
}

/// A strict RFC 8259 reader over UTF-8 bytes that builds a `JSONValue` tree.
///
/// - Validates UTF-8 (no overlong forms, no surrogates, raw or escaped, unless paired).
/// - Limits nesting to `maxDepth`, so deep input is an error, never a stack overflow.
/// - Keeps object members in order, duplicates included, and reports whether any
///   object held a duplicate key (`sawDuplicateKey`), comparing keys by code points.
///
/// It reads through `JSONTape` (the one grammar) and then builds the tree with exact capacities.
package struct JSONReader: ~Copyable {
  let bytes: UnsafeBufferPointer<UInt8>
  private let maxDepth: Int
  package private(set) var sawDuplicateKey = false

  package init(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int = 128) {
    self.bytes = bytes
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
    let tape = try JSONTape(bytes, maxDepth: maxDepth)
    sawDuplicateKey = tape.sawDuplicateKey
    return tape.value(tape.root)
  }
}

/// Builds the nodes of a `JSONTape` in one pass.
struct TapeBuilder: ~Copyable {
  let base: UnsafePointer<UInt8>
  let count: Int
  var i = 0
  private var depth = 0
  private let maxDepth: Int
  private let maxBatch: Int
  var nodes: UnsafeMutablePointer<JSONNode>
  private(set) var capacity: Int
  private(set) var nodeCount = 0
  private(set) var sawDuplicateKey = false

  /// Offsets must fit the 30-bit skip links and 32-bit offsets of `JSONNode`.
  static let maxInput = 1 << 30

  /// - Parameter reusing: node memory to start with (and grow), instead of a new allocation.
  init(
    _ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int, maxBatch: Int,
    reusing memory: (UnsafeMutablePointer<JSONNode>, Int)? = nil
  ) {
    self.base = bytes.baseAddress ?? UnsafePointer(bitPattern: 1)!
    self.count = bytes.count
    self.maxDepth = maxDepth
    self.maxBatch = maxBatch
    if let (nodes, capacity) = memory {
      self.nodes = nodes
      self.capacity = capacity
    } else {
      capacity = Swift.min(64, bytes.count / 2 + 2)
      nodes = .allocate(capacity: capacity)
    }
  }

  mutating func document() throws(JSONParseError) {
    guard count < Self.maxInput else { throw JSONParseError(offset: 0, reason: "a JSON text of 1 GiB or more") }
    skipWhitespace()
    _ = try value(topLevel: true)
    skipWhitespace()
    if i != count { throw fail("unexpected data after the JSON value") }
  }

  // MARK: - Values

  /// Reads one value; returns true when its text is not canonical.
  private mutating func value(topLevel: Bool = false) throws(JSONParseError) -> Bool {
    guard i < count else { throw fail("unexpected end of input") }
    switch base[i] {
    case UInt8(ascii: "{"): return try object()
    case UInt8(ascii: "["): return try array(topLevel: topLevel)
    case UInt8(ascii: "\""): return try string() != 0
    case UInt8(ascii: "t"): try literal("true")
    case UInt8(ascii: "f"): try literal("false")
    case UInt8(ascii: "n"): try literal("null")
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
    default: throw fail("unexpected character")
    }
    return false
  }

  /// A member value: strings and numbers without the dispatch of `value()`.
  @inline(__always)
  private mutating func member() throws(JSONParseError) -> Bool {
    if i < count {
      let b = base[i]
      if b == UInt8(ascii: "\"") { return try string() != 0 }
      if b &- 48 < 10 {
        try number()
        return false
      }
    }
    return try value()
  }

  @inline(__always) mutating func pushNode(start: Int) -> Int {
    if nodeCount == capacity { grow() }
    nodes[nodeCount] = JSONNode(start: UInt32(truncatingIfNeeded: start), end: 0, aux: 0)
    nodeCount += 1
    return nodeCount - 1
  }

  private mutating func grow() {
    let bigger = UnsafeMutablePointer<JSONNode>.allocate(capacity: capacity * 2)
    bigger.moveInitialize(from: nodes, count: nodeCount)
    nodes.deallocate()
    nodes = bigger
    capacity *= 2
  }

  private mutating func enter() throws(JSONParseError) {
    depth += 1
    if depth > maxDepth { throw fail("nesting deeper than \(maxDepth)") }
  }

  private mutating func close(_ n: Int, flags: UInt32) {
    i += 1
    depth -= 1
    nodes[n].end = UInt32(truncatingIfNeeded: i)
    nodes[n].aux = UInt32(truncatingIfNeeded: nodeCount) | flags
  }

  private mutating func object() throws(JSONParseError) -> Bool {
    try enter()
    let n = pushNode(start: i)
    i += 1
    var flags: UInt32 = skipWhitespace() ? JSONNode.nonCanonical : 0
    if i < count, base[i] == UInt8(ascii: "}") {
      close(n, flags: flags)
      return flags != 0
    }
    var keys = KeyIndex()
    defer { keys.release() }
    while true {
      if !at(UInt8(ascii: "\""), &flags) { throw fail("expected a string key") }
      let key = nodeCount
      if try string() != 0 { flags |= JSONNode.nonCanonical }
      if flags & JSONNode.duplicateKey == 0, keys.isDuplicate(key, object: n, builder: self) {
        flags |= JSONNode.duplicateKey
        sawDuplicateKey = true
      }
      if !at(UInt8(ascii: ":"), &flags) { throw fail("expected ':'") }
      i += 1
      if i < count, base[i] <= 0x20, skipWhitespace() { flags |= JSONNode.nonCanonical }
      if try member() { flags |= JSONNode.nonCanonical }
      if at(UInt8(ascii: ","), &flags) {
        i += 1
        continue
      }
      guard i < count else { throw fail("unterminated object") }
      guard base[i] == UInt8(ascii: "}") else { throw fail("expected ',' or '}'") }
      close(n, flags: flags)
      return flags & JSONNode.nonCanonical != 0
    }
  }

  /// True when the next byte, after any whitespace (which makes the container non-canonical), is `byte`.
  @inline(__always)
  private mutating func at(_ byte: UInt8, _ flags: inout UInt32) -> Bool {
    if i < count, base[i] == byte { return true }
    if skipWhitespace() { flags |= JSONNode.nonCanonical }
    return i < count && base[i] == byte
  }

  private mutating func array(topLevel: Bool) throws(JSONParseError) -> Bool {
    try enter()
    let n = pushNode(start: i)
    i += 1
    var flags: UInt32 = skipWhitespace() ? JSONNode.nonCanonical : 0
    if i < count, base[i] == UInt8(ascii: "]") {
      close(n, flags: flags)
      return flags != 0
    }
    var members = 0
    while true {
      if i < count, base[i] <= 0x20, skipWhitespace() { flags |= JSONNode.nonCanonical }
      members += 1
      if topLevel, members > maxBatch {
        var error = fail("a batch of more than \(maxBatch) requests")
        error.batchLimit = maxBatch
        throw error
      }
      if try member() { flags |= JSONNode.nonCanonical }
      if at(UInt8(ascii: ","), &flags) {
        i += 1
        continue
      }
      guard i < count else { throw fail("unterminated array") }
      guard base[i] == UInt8(ascii: "]") else { throw fail("expected ',' or ']'") }
      close(n, flags: flags)
      return flags & JSONNode.nonCanonical != 0
    }
  }

  private mutating func literal(_ word: StaticString) throws(JSONParseError) {
    let n = word.utf8CodeUnitCount
    guard i + n <= count else { throw fail("invalid literal") }
    for k in 0..<n where base[i + k] != word.utf8Start[k] { throw fail("invalid literal") }
    let node = pushNode(start: i)
    i += n
    nodes[node].end = UInt32(truncatingIfNeeded: i)
  }

  // MARK: - Numbers

  private mutating func number() throws(JSONParseError) {
    let node = pushNode(start: i)
    if base[i] == UInt8(ascii: "-") { i += 1 }
    guard i < count, isDigit(base[i]) else { throw fail("invalid number") }
    if base[i] == UInt8(ascii: "0") {
      i += 1
      if i < count, isDigit(base[i]) { throw fail("leading zero in number") }
    } else {
      while i < count, isDigit(base[i]) { i += 1 }
    }
    if i < count, base[i] == UInt8(ascii: ".") {
      i += 1
      guard i < count, isDigit(base[i]) else { throw fail("digit expected after '.'") }
      while i < count, isDigit(base[i]) { i += 1 }
    }
    if i < count, base[i] | 0x20 == UInt8(ascii: "e") {
      i += 1
      if i < count, base[i] == UInt8(ascii: "+") || base[i] == UInt8(ascii: "-") { i += 1 }
      guard i < count, isDigit(base[i]) else { throw fail("digit expected in exponent") }
      while i < count, isDigit(base[i]) { i += 1 }
    }
    nodes[node].end = UInt32(truncatingIfNeeded: i)
  }

  @inline(__always) func isDigit(_ b: UInt8) -> Bool { b &- 48 < 10 }

  // MARK: - Helpers

  /// Skips whitespace; true when there was some.
  @inline(__always) @discardableResult
  private mutating func skipWhitespace() -> Bool {
    let start = i
    while i < count {
      let b = base[i]
      guard b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 else { break }
      i += 1
    }
    return i != start
  }

  func fail(_ reason: String) -> JSONParseError {
    JSONParseError(offset: i, reason: reason)
  }
}
