/// Where the parts of a common `saveCustomEvent` line sit, found by `SaveEventScanner`.
struct SaveEventScan {
  /// The `id` token exactly as sent: a number, or a string with its quotes.
  var id: Range<Int>
  /// The event name, without its quotes.
  var name: Range<Int>
  /// The `properties` object exactly as sent (it is already compact), or nil when absent.
  var properties: Range<Int>?
}

/// A single pass over one request line that recognizes the common `saveCustomEvent` shape, so it
/// can be answered without building a `JSONValue` tree.
///
/// It accepts only what the general path would accept *and* would write back byte for byte:
/// `jsonrpc`, `id` (number or string), `method` and `params` with `name` and optional `properties`;
/// strings of printable ASCII without escapes; property values that are strings (≤ 255 bytes),
/// numbers, booleans or flat arrays of those; no whitespace inside `properties`. Anything else
/// (escapes, non-ASCII, null, nested objects, other params, duplicate keys, any rule violation,
/// nesting beyond `--max-depth`) returns nil, and the line takes the general path, which gives
/// every error and every other answer.
struct SaveEventScanner: ~Copyable {
  private let base: UnsafePointer<UInt8>
  private let count: Int
  private var i = 0
  private let maxDepth: Int
  /// Starts and ends of the property keys seen so far, for the duplicate check.
  private let keys: UnsafeMutablePointer<Int>
  private var keyCount = 0
  /// Room in `keys`: two per property. More properties take the general path (512 bytes stay on the stack).
  private static let keyCapacity = 64

  /// Scans `line`.
  static func scan(_ line: UnsafeBufferPointer<UInt8>, maxDepth: Int, maxPropertiesBytes: Int) -> SaveEventScan? {
    guard let base = line.baseAddress, maxDepth >= 3, isPlain(base, line.count) else { return nil }
    let found = withUnsafeTemporaryAllocation(of: Int.self, capacity: keyCapacity) { keys in
      var scanner = SaveEventScanner(base: base, count: line.count, maxDepth: maxDepth, keys: keys.baseAddress!)
      return scanner.envelope()
    }
    guard let found, (found.properties?.count ?? 2) <= maxPropertiesBytes else { return nil }
    return found
  }

  private init(base: UnsafePointer<UInt8>, count: Int, maxDepth: Int, keys: UnsafeMutablePointer<Int>) {
    self.base = base
    self.count = count
    self.maxDepth = maxDepth
    self.keys = keys
  }

  // MARK: - Envelope and params (whitespace allowed: it never reaches the output)

  private mutating func envelope() -> SaveEventScan? {
    var id: Range<Int>? = nil
    var params: (name: Range<Int>, properties: Range<Int>?)? = nil
    var sawVersion = false
    var sawMethod = false
    skipWhitespace()
    guard take(UInt8(ascii: "{")) else { return nil }
    repeat {
      skipWhitespace()
      guard let key = plainString() else { return nil }
      skipWhitespace()
      guard take(UInt8(ascii: ":")) else { return nil }
      skipWhitespace()
      if isKey(key, "jsonrpc") {
        guard !sawVersion, let v = plainString(), isKey(v, "2.0") else { return nil }
        sawVersion = true
      } else if isKey(key, "id") {
        guard id == nil, let token = idToken() else { return nil }
        id = token
      } else if isKey(key, "method") {
        guard !sawMethod, let m = plainString(), isKey(m, "saveCustomEvent") else { return nil }
        sawMethod = true
      } else if isKey(key, "params") {
        guard params == nil, let p = paramsObject() else { return nil }
        params = p
      } else {
        return nil
      }
      skipWhitespace()
    } while take(UInt8(ascii: ","))
    guard take(UInt8(ascii: "}")) else { return nil }
    skipWhitespace()
    guard i == count, sawVersion, sawMethod, let id, let params else { return nil }
    return SaveEventScan(id: id, name: params.name, properties: params.properties)
  }

  /// A number token or a plain string (quotes included).
  private mutating func idToken() -> Range<Int>? {
    let start = i
    if i < count, base[i] == UInt8(ascii: "\"") {
      guard plainString() != nil else { return nil }
    } else {
      guard number() else { return nil }
    }
    return start..<i
  }

  private mutating func paramsObject() -> (name: Range<Int>, properties: Range<Int>?)? {
    guard take(UInt8(ascii: "{")) else { return nil }
    var name: Range<Int>? = nil
    var properties: Range<Int>? = nil
    var sawProperties = false
    repeat {
      skipWhitespace()
      guard let key = plainString() else { return nil }
      skipWhitespace()
      guard take(UInt8(ascii: ":")) else { return nil }
      skipWhitespace()
      if isKey(key, "name") {
        guard name == nil, let n = plainString(), EventRulesFastCheck.nameIsValid(base, n) else { return nil }
        name = n
      } else if isKey(key, "properties") {
        guard !sawProperties, let p = propertiesObject() else { return nil }
        sawProperties = true
        properties = p
      } else {
        return nil
      }
      skipWhitespace()
    } while take(UInt8(ascii: ","))
    guard take(UInt8(ascii: "}")), let name else { return nil }
    return (name, properties)
  }

  // MARK: - Properties (compact only: copied to the item as they are)

  private mutating func propertiesObject() -> Range<Int>? {
    let start = i
    guard maxDepth >= 3, take(UInt8(ascii: "{")) else { return nil }
    if take(UInt8(ascii: "}")) { return start..<i }
    repeat {
      guard let key = plainString(), EventRulesFastCheck.keyIsValid(base, key), isNewKey(key) else { return nil }
      guard take(UInt8(ascii: ":")), propertyValue() else { return nil }
    } while take(UInt8(ascii: ","))
    guard take(UInt8(ascii: "}")) else { return nil }
    return start..<i
  }

  /// Records `key`; false when an earlier property had the same key, or there is no room left.
  private mutating func isNewKey(_ key: Range<Int>) -> Bool {
    guard keyCount < Self.keyCapacity else { return false }
    var k = 0
    while k < keyCount {
      if keys[k + 1] - keys[k] == key.count && memcmp(base + keys[k], base + key.lowerBound, key.count) == 0 {
        return false
      }
      k += 2
    }
    keys[keyCount] = key.lowerBound
    keys[keyCount + 1] = key.upperBound
    keyCount += 2
    return true
  }

  private mutating func propertyValue() -> Bool {
    guard i < count else { return false }
    if base[i] == UInt8(ascii: "[") {
      guard maxDepth >= 4 else { return false }
      i += 1
      if take(UInt8(ascii: "]")) { return true }
      repeat {
        guard scalar(inArray: true) else { return false }
      } while take(UInt8(ascii: ","))
      return take(UInt8(ascii: "]"))
    }
    return scalar(inArray: false)
  }

  /// A string of at most 255 bytes, a number, `true` or `false`. In arrays, no string that might be a date-time.
  private mutating func scalar(inArray: Bool) -> Bool {
    guard i < count else { return false }
    switch base[i] {
    case UInt8(ascii: "\""):
      guard let s = plainString(), s.count <= TextLimit.maxCharacters else { return false }
      return !inArray || !EventRulesFastCheck.mightBeDateTime(base, s)
    case UInt8(ascii: "t"): return literal("true")
    case UInt8(ascii: "f"): return literal("false")
    default: return number()
    }
  }

  // MARK: - Tokens

  /// A string of printable ASCII without escapes (`scan` checked the whole line for other bytes);
  /// returns its contents' range.
  private mutating func plainString() -> Range<Int>? {
    guard i < count, base[i] == UInt8(ascii: "\"") else { return nil }
    i += 1
    let start = i
    while i < count && base[i] != UInt8(ascii: "\"") { i += 1 }
    guard i < count else { return nil }
    i += 1
    return start..<(i - 1)
  }

  /// True when `line` has no `\\`, no control byte and no byte above 0x7F, so every string in it is
  /// plain ASCII that needs no escaping. Whitespace other than spaces counts as a control byte here.
  private static func isPlain(_ base: UnsafePointer<UInt8>, _ count: Int) -> Bool {
    var k = 0
    var seen: UInt64 = 0
    while k + 8 <= count {
      seen |= specialBytes(UnsafeRawPointer(base + k).loadUnaligned(as: UInt64.self))
      k += 8
    }
    guard seen == 0 else { return false }
    while k < count {
      let b = base[k]
      if b < 0x20 || b >= 0x80 || b == UInt8(ascii: "\\") { return false }
      k += 1
    }
    return true
  }

  /// Nonzero when one of the 8 bytes in `w` is `\\`, a control byte or non-ASCII (SWAR bit tricks:
  /// exact about whether such a byte exists, which is all that is asked).
  @inline(__always)
  private static func specialBytes(_ w: UInt64) -> UInt64 {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let backslash = w ^ (ones &* 0x5C)
    let zeroBackslash = (backslash &- ones) & ~backslash
    let control = (w &- (ones &* 0x20)) & ~w  // borrows into the high bit of bytes below 0x20
    return (w | zeroBackslash | control) & (ones &* 0x80)
  }

  /// RFC 8259 number grammar, as `JSONReader` checks it.
  private mutating func number() -> Bool {
    _ = take(UInt8(ascii: "-"))
    guard i < count, isDigit(base[i]) else { return false }
    if base[i] == UInt8(ascii: "0") {
      i += 1
      if i < count, isDigit(base[i]) { return false }
    } else {
      skipDigits()
    }
    if take(UInt8(ascii: ".")) {
      guard i < count, isDigit(base[i]) else { return false }
      skipDigits()
    }
    if i < count, base[i] | 0x20 == UInt8(ascii: "e") {
      i += 1
      if i < count, base[i] == UInt8(ascii: "+") || base[i] == UInt8(ascii: "-") { i += 1 }
      guard i < count, isDigit(base[i]) else { return false }
      skipDigits()
    }
    return true
  }

  private mutating func literal(_ word: StaticString) -> Bool {
    let n = word.utf8CodeUnitCount
    guard i + n <= count, memcmp(base + i, word.utf8Start, n) == 0 else { return false }
    i += n
    return true
  }

  @inline(__always) private func isDigit(_ b: UInt8) -> Bool { b &- 48 < 10 }

  @inline(__always) private mutating func skipDigits() {
    while i < count, isDigit(base[i]) { i += 1 }
  }

  @inline(__always) private mutating func take(_ b: UInt8) -> Bool {
    guard i < count, base[i] == b else { return false }
    i += 1
    return true
  }

  @inline(__always) private mutating func skipWhitespace() {
    while i < count, base[i] == 0x20 || base[i] == 0x0A || base[i] == 0x0D || base[i] == 0x09 { i += 1 }
  }

  @inline(__always) private func isKey(_ r: Range<Int>, _ word: StaticString) -> Bool {
    r.count == word.utf8CodeUnitCount && memcmp(base + r.lowerBound, word.utf8Start, r.count) == 0
  }
}

/// `CustomEventRules` for plain ASCII text (one byte is one character): true only when the rules
/// pass; the general path reports the problems.
enum EventRulesFastCheck {
  static func nameIsValid(_ base: UnsafePointer<UInt8>, _ r: Range<Int>) -> Bool {
    !r.isEmpty && r.count <= TextLimit.maxCharacters && base[r.lowerBound] != UInt8(ascii: "$")
  }

  /// Top-level property keys: also not `time` or `event_name`.
  static func keyIsValid(_ base: UnsafePointer<UInt8>, _ r: Range<Int>) -> Bool {
    guard nameIsValid(base, r) else { return false }
    if r.count == 4 { return memcmp(base + r.lowerBound, "time", 4) != 0 }
    if r.count == 10 { return memcmp(base + r.lowerBound, "event_name", 10) != 0 }
    return true
  }

  /// A cheap superset of `EventValue.looksLikeDateTime`.
  static func mightBeDateTime(_ base: UnsafePointer<UInt8>, _ r: Range<Int>) -> Bool {
    r.count >= 16 && r.count <= 40 && base[r.lowerBound + 4] == UInt8(ascii: "-")
  }
}
