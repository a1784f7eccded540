/// An independent strict RFC 8259 parser: the oracle `FuzzDiff` checks `JSONReader` against.
/// It shares no code with the library; it is written for clarity, not speed.
///
/// Policy where RFC 8259 leaves a choice (the protocol's, see Protocol/README.md), mirrored here
/// without calling the library:
/// - the text must be UTF-8 (RFC 8259 §8.1), strictly per RFC 3629: no overlong forms, no encoded
///   surrogates, nothing above U+10FFFF; a byte order mark is refused (the line framer strips one);
/// - a `\u` escape of a surrogate must be a high one followed by a `\u` low one (no lone surrogates);
/// - nesting deeper than `maxDepth` (128) containers is refused;
/// - duplicate object keys are accepted and kept in order (the request layer decides).
struct StrictParser {
  indirect enum Value: Equatable {
    case null
    case bool(Bool)
    /// The number's exact source text.
    case number([UInt8])
    /// The string's decoded UTF-8 bytes.
    case string([UInt8])
    case array([Value])
    case object([(key: [UInt8], value: Value)])

    static func == (a: Value, b: Value) -> Bool {
      switch (a, b) {
      case (.null, .null): true
      case (.bool(let x), .bool(let y)): x == y
      case (.number(let x), .number(let y)), (.string(let x), .string(let y)): x == y
      case (.array(let x), .array(let y)): x == y
      case (.object(let x), .object(let y)):
        x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
      default: false
      }
    }
  }

  struct Rejected: Error {}

  let bytes: [UInt8]
  var at = 0
  let maxDepth: Int

  static func parse(_ bytes: [UInt8], maxDepth: Int = 128) -> Value? {
    var parser = StrictParser(bytes: bytes, maxDepth: maxDepth)
    do {
      parser.whitespace()
      let value = try parser.value(depth: 0)
      parser.whitespace()
      return parser.at == bytes.count ? value : nil
    } catch {
      return nil
    }
  }

  private var peek: UInt8? { at < bytes.count ? bytes[at] : nil }

  private mutating func whitespace() {
    while let b = peek, b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { at += 1 }
  }

  private mutating func expect(_ b: UInt8) throws(Rejected) {
    guard peek == b else { throw Rejected() }
    at += 1
  }

  private mutating func value(depth: Int) throws(Rejected) -> Value {
    switch peek {
    case UInt8(ascii: "{")?: return try object(depth: depth + 1)
    case UInt8(ascii: "[")?: return try array(depth: depth + 1)
    case UInt8(ascii: "\"")?: return .string(try string())
    case UInt8(ascii: "t")?: try word("true"); return .bool(true)
    case UInt8(ascii: "f")?: try word("false"); return .bool(false)
    case UInt8(ascii: "n")?: try word("null"); return .null
    default: return .number(try number())
    }
  }

  private mutating func word(_ w: String) throws(Rejected) {
    for b in w.utf8 { try expect(b) }
  }

  private mutating func object(depth: Int) throws(Rejected) -> Value {
    guard depth <= maxDepth else { throw Rejected() }
    try expect(UInt8(ascii: "{"))
    whitespace()
    var members: [(key: [UInt8], value: Value)] = []
    if peek == UInt8(ascii: "}") {
      at += 1
      return .object(members)
    }
    while true {
      whitespace()
      guard peek == UInt8(ascii: "\"") else { throw Rejected() }
      let key = try string()
      whitespace()
      try expect(UInt8(ascii: ":"))
      whitespace()
      members.append((key, try value(depth: depth)))
      whitespace()
      if peek == UInt8(ascii: ",") {
        at += 1
        continue
      }
      try expect(UInt8(ascii: "}"))
      return .object(members)
    }
  }

  private mutating func array(depth: Int) throws(Rejected) -> Value {
    guard depth <= maxDepth else { throw Rejected() }
    try expect(UInt8(ascii: "["))
    whitespace()
    var items: [Value] = []
    if peek == UInt8(ascii: "]") {
      at += 1
      return .array(items)
    }
    while true {
      whitespace()
      items.append(try value(depth: depth))
      whitespace()
      if peek == UInt8(ascii: ",") {
        at += 1
        continue
      }
      try expect(UInt8(ascii: "]"))
      return .array(items)
    }
  }

  // number = [ minus ] int [ frac ] [ exp ]
  private mutating func number() throws(Rejected) -> [UInt8] {
    let start = at
    if peek == UInt8(ascii: "-") { at += 1 }
    guard let first = peek, isDigit(first) else { throw Rejected() }
    at += 1
    if first != UInt8(ascii: "0") { digits() }
    if peek == UInt8(ascii: ".") {
      at += 1
      guard let d = peek, isDigit(d) else { throw Rejected() }
      digits()
    }
    if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
      at += 1
      if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { at += 1 }
      guard let d = peek, isDigit(d) else { throw Rejected() }
      digits()
    }
    return Array(bytes[start..<at])
  }

  private func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

  private mutating func digits() {
    while let b = peek, isDigit(b) { at += 1 }
  }

  private mutating func string() throws(Rejected) -> [UInt8] {
    try expect(UInt8(ascii: "\""))
    var out: [UInt8] = []
    while true {
      guard let b = peek else { throw Rejected() }
      at += 1
      switch b {
      case UInt8(ascii: "\""): return out
      case UInt8(ascii: "\\"): try escape(into: &out)
      case 0x00..<0x20: throw Rejected()
      case 0x20..<0x80: out.append(b)
      default: try encoded(b, into: &out)
      }
    }
  }

  private mutating func escape(into out: inout [UInt8]) throws(Rejected) {
    guard let e = peek else { throw Rejected() }
    at += 1
    switch e {
    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
    case UInt8(ascii: "b"): out.append(0x08)
    case UInt8(ascii: "f"): out.append(0x0C)
    case UInt8(ascii: "n"): out.append(0x0A)
    case UInt8(ascii: "r"): out.append(0x0D)
    case UInt8(ascii: "t"): out.append(0x09)
    case UInt8(ascii: "u"):
      var scalar = try hex4()
      if (0xDC00...0xDFFF).contains(scalar) { throw Rejected() }
      if (0xD800...0xDBFF).contains(scalar) {
        try expect(UInt8(ascii: "\\"))
        try expect(UInt8(ascii: "u"))
        let low = try hex4()
        guard (0xDC00...0xDFFF).contains(low) else { throw Rejected() }
        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
      }
      appendUTF8(scalar, to: &out)
    default: throw Rejected()
    }
  }

  private mutating func hex4() throws(Rejected) -> UInt32 {
    var v: UInt32 = 0
    for _ in 0..<4 {
      guard let h = peek else { throw Rejected() }
      at += 1
      let digit: UInt32
      switch h {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(h - 0x30)
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(h - 0x61 + 10)
      case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(h - 0x41 + 10)
      default: throw Rejected()
      }
      v = v * 16 + digit
    }
    return v
  }

  /// Decodes one multi-byte UTF-8 sequence whose lead byte `b` was just read, to its scalar, and
  /// appends its bytes after checking the scalar is in range and the form is the shortest.
  private mutating func encoded(_ b: UInt8, into out: inout [UInt8]) throws(Rejected) {
    let count: Int
    var scalar: UInt32
    switch b {
    case 0xC0...0xDF: count = 1; scalar = UInt32(b & 0x1F)
    case 0xE0...0xEF: count = 2; scalar = UInt32(b & 0x0F)
    case 0xF0...0xF7: count = 3; scalar = UInt32(b & 0x07)
    default: throw Rejected()
    }
    for _ in 0..<count {
      guard let c = peek, c & 0xC0 == 0x80 else { throw Rejected() }
      at += 1
      scalar = scalar << 6 | UInt32(c & 0x3F)
    }
    let shortest = scalar < 0x80 ? 0 : scalar < 0x800 ? 1 : scalar < 0x10000 ? 2 : 3
    guard shortest == count, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else { throw Rejected() }
    appendUTF8(scalar, to: &out)
  }

  private func appendUTF8(_ s: UInt32, to out: inout [UInt8]) {
    switch s {
    case 0..<0x80: out.append(UInt8(s))
    case 0x80..<0x800: out += [UInt8(0xC0 | s >> 6), UInt8(0x80 | s & 0x3F)]
    case 0x800..<0x10000: out += [UInt8(0xE0 | s >> 12), UInt8(0x80 | s >> 6 & 0x3F), UInt8(0x80 | s & 0x3F)]
    default:
      out += [UInt8(0xF0 | s >> 18), UInt8(0x80 | s >> 12 & 0x3F), UInt8(0x80 | s >> 6 & 0x3F), UInt8(0x80 | s & 0x3F)]
    }
  }
}
