/// Finds the end of a JSON value in stored bytes when, and only when, the bytes are exactly what
/// reading them into a `JSONValue` and writing it back would give (compact, strings escaped as
/// `appendJSONString` escapes them, valid UTF-8). Such bytes can be copied where the tree would
/// have been written: a drain renders from stored bytes with it, and falls back to the tree for
/// anything it does not accept (nil), so both give the same bytes.
public enum CanonicalJSON {
  /// Containers nested deeper than this are left to the tree (the reader's own limit is larger).
  static let maxDepth = 512

  /// True when `b` is members `,"key":value,…` (or nothing), each canonical: a stored item body
  /// that needs no parse to be known well formed.
  package static func isMembers(_ b: UnsafeRawBufferPointer) -> Bool {
    var i = 0
    while i < b.count {
      guard b[i] == UInt8(ascii: ","), i + 1 < b.count, b[i + 1] == UInt8(ascii: "\""),
        let keyEnd = stringEnd(b, i + 1), keyEnd < b.count, b[keyEnd] == UInt8(ascii: ":"),
        let end = valueEnd(b, keyEnd + 1)
      else { return false }
      i = end
    }
    return true
  }

  /// The index just past the value starting at `i`, in bytes already known canonical (the store
  /// marks a row so once `isMembers` accepted it, or a save wrote it): the structure is followed,
  /// nothing is checked again. Bounds are kept: bytes that are not what it expects give nil or a
  /// wrong end, never a read outside `b`.
  package static func knownValueEnd(_ b: UnsafeRawBufferPointer, _ i: Int) -> Int? {
    guard i < b.count else { return nil }
    let lead = b[i]
    if lead == 0x22 { return knownStringEnd(b, i) }
    guard lead == UInt8(ascii: "{") || lead == UInt8(ascii: "[") else {  // a number or a literal
      var j = i + 1
      while j < b.count, b[j] != UInt8(ascii: ","), b[j] != UInt8(ascii: "}"), b[j] != UInt8(ascii: "]") { j += 1 }
      return j
    }
    var depth = 0
    var j = i
    while j < b.count {
      let c = b[j]
      if c == 0x22 {
        guard let end = knownStringEnd(b, j) else { return nil }
        j = end
        continue
      }
      if c == UInt8(ascii: "{") || c == UInt8(ascii: "[") {
        depth += 1
      } else if c == UInt8(ascii: "}") || c == UInt8(ascii: "]") {
        depth -= 1
        if depth == 0 { return j + 1 }
      }
      j += 1
    }
    return nil
  }

  /// The index past the closing quote of the string at `start`, in known-canonical bytes: 8 bytes
  /// at a time to the next quote or backslash (the lowest set bit of the mask is the first one).
  @inline(__always)
  package static func knownStringEnd(_ b: UnsafeRawBufferPointer, _ start: Int) -> Int? {
    var i = start + 1
    while i < b.count {
      if i + 8 <= b.count {
        let w = b.loadUnaligned(fromByteOffset: i, as: UInt64.self)
        let found = bytes(w, equalTo: 0x22) | bytes(w, equalTo: 0x5C)
        if found == 0 {
          i += 8
          continue
        }
        i += found.trailingZeroBitCount >> 3
      }
      switch b[i] {
      case 0x22: return i + 1
      case 0x5C: i += 2
      default: i += 1
      }
    }
    return nil
  }

  /// The index just past the canonical value starting at `i`, or nil.
  package static func valueEnd(_ b: UnsafeRawBufferPointer, _ i: Int) -> Int? {
    valueEnd(b, i, depth: 0)
  }

  private static func valueEnd(_ b: UnsafeRawBufferPointer, _ i: Int, depth: Int) -> Int? {
    guard i < b.count else { return nil }
    switch b[i] {
    case UInt8(ascii: "\""): return stringEnd(b, i)
    case UInt8(ascii: "{"): return depth < maxDepth ? containerEnd(b, i, object: true, depth: depth + 1) : nil
    case UInt8(ascii: "["): return depth < maxDepth ? containerEnd(b, i, object: false, depth: depth + 1) : nil
    case UInt8(ascii: "t"): return literalEnd(b, i, "true")
    case UInt8(ascii: "f"): return literalEnd(b, i, "false")
    case UInt8(ascii: "n"): return literalEnd(b, i, "null")
    default: return numberEnd(b, i)
    }
  }

  private static func containerEnd(_ b: UnsafeRawBufferPointer, _ start: Int, object: Bool, depth: Int) -> Int? {
    let close = object ? UInt8(ascii: "}") : UInt8(ascii: "]")
    var i = start + 1
    guard i < b.count else { return nil }
    if b[i] == close { return i + 1 }
    while true {
      if object {
        guard i < b.count, b[i] == UInt8(ascii: "\""), let keyEnd = stringEnd(b, i), keyEnd < b.count,
          b[keyEnd] == UInt8(ascii: ":")
        else { return nil }
        i = keyEnd + 1
      }
      // Strings, the most common values, without the dispatch.
      let end = i < b.count && b[i] == UInt8(ascii: "\"") ? stringEnd(b, i) : valueEnd(b, i, depth: depth)
      guard let end, end < b.count else { return nil }
      if b[end] == close { return end + 1 }
      guard b[end] == UInt8(ascii: ",") else { return nil }
      i = end + 1
    }
  }

  private static func literalEnd(_ b: UnsafeRawBufferPointer, _ i: Int, _ word: StaticString) -> Int? {
    let n = word.utf8CodeUnitCount
    guard i + n <= b.count else { return nil }
    for k in 0..<n where b[i + k] != word.utf8Start[k] { return nil }
    return i + n
  }

  /// The end of the JSON number token starting at `start`, or nil (every valid token is written
  /// back as it was read, so a valid token is canonical).
  package static func numberEnd(_ b: UnsafeRawBufferPointer, _ start: Int) -> Int? {
    var i = start
    if i < b.count, b[i] == UInt8(ascii: "-") { i += 1 }
    guard i < b.count else { return nil }
    if b[i] == UInt8(ascii: "0") {
      i += 1
    } else {
      guard let end = digitsEnd(b, i) else { return nil }
      i = end
    }
    if i < b.count, b[i] == UInt8(ascii: ".") {
      guard let end = digitsEnd(b, i + 1) else { return nil }
      i = end
    }
    if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
      i += 1
      if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
      guard let end = digitsEnd(b, i) else { return nil }
      i = end
    }
    return i
  }

  /// The end of one or more digits from `start`, or nil when there is none.
  @inline(__always)
  private static func digitsEnd(_ b: UnsafeRawBufferPointer, _ start: Int) -> Int? {
    var i = start
    while i < b.count, b[i] &- UInt8(ascii: "0") < 10 { i += 1 }
    return i > start ? i : nil
  }

  /// The index past the closing quote of the canonical string starting at `start` (a quote), or nil.
  @inline(__always)
  package static func stringEnd(_ b: UnsafeRawBufferPointer, _ start: Int) -> Int? {
    var i = start + 1
    let n = b.count
    while i < n {
      i = plainRunEnd(b, i)  // at the special byte, or within the last 7 bytes
      while i < n, b[i] >= 0x20, b[i] < 0x80, b[i] != 0x22, b[i] != 0x5C { i += 1 }
      guard i < n else { return nil }
      switch b[i] {
      case 0x22: return i + 1
      case 0x5C:
        guard let next = escapeEnd(b, i) else { return nil }
        i = next
      case 0x80...:
        guard let next = utf8End(b, i) else { return nil }
        i = next
      default: return nil  // a raw control byte
      }
    }
    return nil
  }

  /// Skips 8 bytes at a time while none of them is a quote, a backslash, a control byte or
  /// non-ASCII; returns the first such byte (the lowest set bit of the word's mask: borrows only
  /// run upward), or where the last 7 bytes start.
  @inline(__always)
  private static func plainRunEnd(_ b: UnsafeRawBufferPointer, _ start: Int) -> Int {
    var i = start
    while i + 8 <= b.count {
      let special = PlainRun.specialBytes(b.loadUnaligned(fromByteOffset: i, as: UInt64.self))
      if special != 0 { return i + special.trailingZeroBitCount >> 3 }
      i += 8
    }
    return i
  }

  private static let ones: UInt64 = 0x0101_0101_0101_0101
  private static let high: UInt64 = 0x8080_8080_8080_8080

  /// The high bit of each byte of `w` equal to `byte` (SWAR; a false bit can only follow a true one,
  /// as borrows run upward, so the lowest set bit is exact).
  @inline(__always)
  private static func bytes(_ w: UInt64, equalTo byte: UInt8) -> UInt64 {
    let x = w ^ (ones &* UInt64(byte))
    return (x &- ones) & ~x & high
  }

  /// An escape as `appendJSONString` writes it: `\"` `\\` `\n` `\r` `\t` `\b` `\f`, `\u00xx` for the
  /// other control bytes (lowercase hex), `\u2028` and `\u2029`.
  private static func escapeEnd(_ b: UnsafeRawBufferPointer, _ i: Int) -> Int? {
    guard i + 1 < b.count else { return nil }
    switch b[i + 1] {
    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"),
      UInt8(ascii: "b"), UInt8(ascii: "f"):
      return i + 2
    case UInt8(ascii: "u"):
      guard i + 6 <= b.count else { return nil }
      let hex = (b[i + 2], b[i + 3], b[i + 4], b[i + 5])
      if hex.0 == UInt8(ascii: "2"), hex.1 == UInt8(ascii: "0"), hex.2 == UInt8(ascii: "2"),
        hex.3 == UInt8(ascii: "8") || hex.3 == UInt8(ascii: "9")
      {
        return i + 6
      }
      guard hex.0 == UInt8(ascii: "0"), hex.1 == UInt8(ascii: "0"),
        hex.2 == UInt8(ascii: "0") || hex.2 == UInt8(ascii: "1")
      else { return nil }
      let low: UInt8
      switch hex.3 {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): low = hex.3 - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): low = hex.3 - UInt8(ascii: "a") + 10
      default: return nil
      }
      let value = (hex.2 == UInt8(ascii: "1") ? 16 : 0) + low
      return [0x08, 0x09, 0x0A, 0x0C, 0x0D].contains(value) ? nil : i + 6
    default: return nil
    }
  }

  /// One well-formed UTF-8 sequence (no overlong form, no surrogate, at most U+10FFFF) that
  /// `appendJSONString` writes raw (not U+2028 or U+2029).
  private static func utf8End(_ b: UnsafeRawBufferPointer, _ i: Int) -> Int? {
    guard case .valid(let length) = UTF8Sequence.check(b.baseAddress! + i, available: b.count - i) else { return nil }
    if b[i] == 0xE2, b[i + 1] == 0x80, b[i + 2] == 0xA8 || b[i + 2] == 0xA9 { return nil }
    return i + length
  }
}
