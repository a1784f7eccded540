import OutboxJSON
import OutboxSupport

/// The small readers `DirectScan` is made of: each reads one piece at the cursor and moves past it.
extension DirectScan {
  /// The end (past the closing quote) of the canonical string at `start`, and whether it is plain
  /// (`CanonicalJSON.stringEndAndPlain`); nil when not canonical.
  @inline(__always)
  func string(_ start: Int) -> (end: Int, plain: Bool)? { CanonicalJSON.stringEndAndPlain(b, start) }

  /// A canonical string without escapes, at most 255 bytes; its contents.
  @inline(__always)
  mutating func plainString() -> Range<Int>? {
    let start = i
    guard i < b.count, b[i] == 0x22, let (end, plain) = string(start) else { return nil }
    let contents = start + 1..<end - 1
    guard contents.count <= 255, plain || !contains(contents, 0x5C) else { return nil }
    i = end
    return contents
  }

  /// A canonical string with at least one character and no escape (a user's string with one
  /// is left to the tape path, which writes it again).
  @inline(__always)
  mutating func nonEmptyString() -> Bool {
    let start = i
    guard i < b.count, b[i] == 0x22, let (end, plain) = string(start), end - start > 2,
      plain || !contains(start + 1..<end - 1, 0x5C)
    else { return false }
    i = end
    return true
  }

  /// True when a key of the object at `object`, before `end`, has the contents of `key` (the
  /// object's bytes up to `end` are canonical: the scan took them).
  func hasKey(in object: Int, before end: Int, equalTo key: Range<Int>) -> Bool {
    var j = object + 1
    while j < end {
      guard let keyEnd = CanonicalJSON.knownStringEnd(b, j) else { return true }  // cannot be: leave it
      let other = j + 1..<keyEnd - 1
      if other.count == key.count,
        memcmp(b.baseAddress! + other.lowerBound, b.baseAddress! + key.lowerBound, key.count) == 0
      {
        return true
      }
      guard let valueEnd = CanonicalJSON.knownValueEnd(b, keyEnd + 1) else { return true }
      j = valueEnd + 1
    }
    return false
  }

  @inline(__always) func isKey(_ key: Range<Int>, _ text: StaticString) -> Bool {
    key.count == text.utf8CodeUnitCount && memcmp(b.baseAddress! + key.lowerBound, text.utf8Start, key.count) == 0
  }

  @inline(__always) func contains(_ range: Range<Int>, _ byte: UInt8) -> Bool {
    range.isEmpty ? false : memchr(b.baseAddress! + range.lowerBound, Int32(byte), range.count) != nil
  }

  @inline(__always) mutating func take(_ byte: UInt8) -> Bool {
    guard i < b.count, b[i] == byte else { return false }
    i += 1
    return true
  }

  @inline(__always) mutating func take(_ text: StaticString) -> Bool {
    let n = text.utf8CodeUnitCount
    guard i + n <= b.count, memcmp(b.baseAddress! + i, text.utf8Start, n) == 0 else { return false }
    i += n
    return true
  }
}
