import OutboxDomain
import OutboxJSON
import OutboxSupport

/// The one pass of `OneScanSave`: a cursor over the line (`b`, and `i`, where the next part starts)
/// and what it found. Each method reads one part at the cursor and moves past it, or returns false
/// (the line is left to the tape path).
struct OneScan {
  private let b: UnsafeRawBufferPointer
  private var i = 0
  private(set) var id: Int64 = 0
  /// The name with its quotes, the properties object and the user object, as sent.
  private(set) var name = 0..<0
  private(set) var properties: Range<Int>? = nil
  private(set) var user: Range<Int>? = nil

  init(_ bytes: UnsafeRawBufferPointer) { b = bytes }

  /// The whole line: the envelope's four members, each once, and nothing after it. The order nearly
  /// every client writes is read straight through (`commonLayout`); any other, member by member
  /// (each key told by its first letter and matched whole with its colon).
  mutating func request(maxPropertiesBytes: Int) -> Bool {
    let start = self
    if commonLayout(maxPropertiesBytes: maxPropertiesBytes) { return true }
    self = start
    return anyLayout(maxPropertiesBytes: maxPropertiesBytes)
  }

  /// The envelope in any layout, member by member (out of line, off the common layout's path).
  @inline(never)
  private mutating func anyLayout(maxPropertiesBytes: Int) -> Bool {
    let seen = members { scan, first in
      switch first {
      case UInt8(ascii: "j"): return scan.take(Key.jsonrpc) ? 1 : nil
      case UInt8(ascii: "i"): return scan.take(Key.id) && scan.integerID() ? 2 : nil
      case UInt8(ascii: "m"): return scan.take(Key.method) && scan.method() ? 4 : nil
      case UInt8(ascii: "p"):
        return scan.take(Key.params) && scan.params(maxPropertiesBytes: maxPropertiesBytes) ? 8 : nil
      default: return nil
      }
    }
    return seen == 15 && i == b.count
  }

  /// The members' keys with their colons (and `jsonrpc` with its value), as both layouts match them.
  private enum Key {
    static var jsonrpc: StaticString { "\"jsonrpc\":\"2.0\"" }
    static var id: StaticString { "\"id\":" }
    static var method: StaticString { "\"method\":" }
    static var params: StaticString { "\"params\":" }
    static var name: StaticString { "\"name\":" }
    static var properties: StaticString { "\"properties\":" }
    static var user: StaticString { "\"user\":" }
  }

  /// The envelope as nearly every client writes it: its members in the order the specification lists
  /// them, read straight through with no dispatch per member (params' members in any order). False
  /// for any other layout (the caller starts over).
  @inline(__always)
  private mutating func commonLayout(maxPropertiesBytes: Int) -> Bool {
    let comma = UInt8(ascii: ",")
    guard take(UInt8(ascii: "{")), take(Key.jsonrpc), take(comma), take(Key.id), integerID() else { return false }
    guard take(comma), take(Key.method), method(), take(comma), take(Key.params) else { return false }
    return params(maxPropertiesBytes: maxPropertiesBytes) && take(UInt8(ascii: "}")) && i == b.count
  }

  /// `params`: `name`, and `properties` and `user` when given, each once (out of line: both
  /// layouts call it, and its readers are inline in it).
  @inline(never)
  private mutating func params(maxPropertiesBytes: Int) -> Bool {
    let seen = members { scan, first in
      switch first {
      case UInt8(ascii: "n"): return scan.take(Key.name) && scan.eventName() ? 1 : nil
      case UInt8(ascii: "p"):
        return scan.take(Key.properties) && scan.propertiesObject(maxBytes: maxPropertiesBytes) ? 2 : nil
      case UInt8(ascii: "u"): return scan.take(Key.user) && scan.userObject() ? 4 : nil
      default: return nil
      }
    }
    return seen.map { $0 & 1 != 0 } ?? false
  }

  /// An object whose members `member` reads, given the byte after each key's opening quote: it returns
  /// the member's bit, or nil to refuse. The bits seen, or nil for a member refused or repeated.
  @inline(__always)
  private mutating func members(_ member: (inout OneScan, UInt8) -> UInt8?) -> UInt8? {
    guard take(UInt8(ascii: "{")) else { return nil }
    var seen: UInt8 = 0
    repeat {
      guard i + 1 < b.count, let bit = member(&self, b[i + 1]), seen & bit == 0 else { return nil }
      seen |= bit
    } while take(UInt8(ascii: ","))
    return take(UInt8(ascii: "}")) ? seen : nil
  }

  /// The event name: no escape, and every name rule passed on its raw bytes (`CustomEventRules.isPlainName`).
  @inline(__always)
  private mutating func eventName() -> Bool {
    let start = i
    guard let contents = plainString(), CustomEventRules.isPlainName(raw(contents.lowerBound, contents.count))
    else { return false }
    name = start..<i
    return true
  }

  /// The properties object, at most `maxBytes` long; its keys are compared with each other only
  /// when a 64-bit sketch of their lengths and bytes says they might repeat.
  @inline(__always)
  private mutating func propertiesObject(maxBytes: Int) -> Bool {
    let start = i
    guard take(UInt8(ascii: "{")) else { return false }
    if !take(UInt8(ascii: "}")) {
      var sketch: UInt64 = 0
      var count = 0
      repeat {
        let keyStart = i
        guard let key = propertyKey() else { return false }
        let bit: UInt64 =
          1 << ((UInt64(key.count) &* 7 &+ UInt64(b[key.lowerBound]) &* 3 &+ UInt64(b[key.upperBound - 1])) & 63)
        if sketch & bit != 0, hasKey(in: start, before: keyStart, equalTo: key) { return false }
        sketch |= bit
        count += 1
        guard count <= 64, propertyValue() else { return false }
      } while take(UInt8(ascii: ","))
      guard take(UInt8(ascii: "}")) else { return false }
    }
    guard i - start <= maxBytes else { return false }
    properties = start..<i
    return true
  }

  /// A property key and its colon: no escape, and every key rule passed on its raw bytes
  /// (`CustomEventRules.isPlainKey`); the key's contents.
  @inline(__always)
  private mutating func propertyKey() -> Range<Int>? {
    guard let key = plainString(), take(UInt8(ascii: ":")),
      CustomEventRules.isPlainKey(raw(key.lowerBound, key.count), topLevel: true)
    else { return nil }
    return key
  }

  /// A property value: a string that fits uncounted as sent (`TextLimit.fitsUncounted`), a number, a
  /// boolean, or an array of those. Null, objects and nested arrays are left to the tape path (rules apply in them).
  @inline(__always)
  private mutating func propertyValue() -> Bool {
    guard i < b.count else { return false }
    if b[i] == UInt8(ascii: "[") {
      i += 1
      if take(UInt8(ascii: "]")) { return true }
      repeat {
        guard scalar(inArray: true) else { return false }
      } while take(UInt8(ascii: ","))
      return take(UInt8(ascii: "]"))
    }
    return scalar(inArray: false)
  }

  /// A string, number or boolean. In an array, a string that could be a date-time
  /// (`CustomEventRules.mayBeDateTime`) is left to the tape path, where the rules look at it.
  @inline(__always)
  private mutating func scalar(inArray: Bool) -> Bool {
    guard i < b.count else { return false }
    switch b[i] {
    case 0x22:
      let start = i
      guard let (end, plain) = string(start), TextLimit.fitsUncounted(byteCount: end - start - 2) else { return false }
      i = end
      guard inArray else { return true }
      return !CustomEventRules.mayBeDateTime(
        raw(start + 1, end - start - 2), escaped: !plain && contains(start + 1..<end - 1, 0x5C))
    case UInt8(ascii: "t"): return take("true")
    case UInt8(ascii: "f"): return take("false")
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
      guard let end = CanonicalJSON.numberEnd(b, i) else { return false }
      i = end
      return true
    default: return false
    }
  }

  /// The `user` param in its wire form (`UserIdentifier.isWireForm`): one of `externalId`,
  /// `brazeId`, `email`, `phone` with a non-empty string, or `alias` with `name` then `label`, both
  /// non-empty strings; no escapes.
  @inline(__always)
  private mutating func userObject() -> Bool {
    let start = i
    guard take(UInt8(ascii: "{")) else { return false }
    if take("\"alias\":{\"name\":") {
      guard nonEmptyString(), take(",\"label\":"), nonEmptyString(), take(UInt8(ascii: "}")) else { return false }
    } else {
      guard take("\"externalId\":") || take("\"brazeId\":") || take("\"email\":") || take("\"phone\":"),
        nonEmptyString()
      else { return false }
    }
    guard take(UInt8(ascii: "}")) else { return false }
    user = start..<i
    return true
  }

  /// The request id: a non-negative integer of at most 18 digits, without a leading zero.
  @inline(__always)
  private mutating func integerID() -> Bool {
    let start = i
    var value: Int64 = 0
    while i < b.count, b[i] &- UInt8(ascii: "0") < 10 {
      value = value &* 10 &+ Int64(b[i] &- UInt8(ascii: "0"))
      i += 1
    }
    let digits = i - start
    guard digits >= 1, digits <= 18, digits == 1 || b[start] != UInt8(ascii: "0") else { return false }
    id = value
    return true
  }

  /// `"saveCustomEvent"`, its bytes compared with the method's one name.
  @inline(__always)
  private mutating func method() -> Bool {
    var wire = SaveCustomEvent.name
    return wire.withUTF8 { name in
      let end = i + name.count + 2
      guard end <= b.count, b[i] == 0x22, b[end - 1] == 0x22,
        memcmp(b.baseAddress! + i + 1, name.baseAddress!, name.count) == 0
      else { return false }
      i = end
      return true
    }
  }

  /// The canonical string at `start`: its end (past the quote) and whether it is plain; nil if not canonical.
  @inline(__always)
  private func string(_ start: Int) -> (end: Int, plain: Bool)? { CanonicalJSON.stringEndAndPlain(b, start) }

  /// A canonical string without escapes; its contents (the name and key rules then look at them).
  @inline(__always)
  private mutating func plainString() -> Range<Int>? {
    let start = i
    guard i < b.count, b[i] == 0x22, let (end, plain) = string(start) else { return nil }
    let contents = start + 1..<end - 1
    guard plain || !contains(contents, 0x5C) else { return nil }
    i = end
    return contents
  }

  /// A canonical string with at least one character and no escape (a user's string with one
  /// is left to the tape path, which writes it again).
  @inline(__always)
  private mutating func nonEmptyString() -> Bool {
    let start = i
    guard i < b.count, b[i] == 0x22, let (end, plain) = string(start), end - start > 2,
      plain || !contains(start + 1..<end - 1, 0x5C)
    else { return false }
    i = end
    return true
  }

  /// True when a key of the object at `object`, before `end`, has the contents of `key` (the
  /// object's bytes up to `end` are canonical: the scan took them).
  private func hasKey(in object: Int, before end: Int, equalTo key: Range<Int>) -> Bool {
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

  /// `count` bytes of the line from `start`, for the domain's rules.
  @inline(__always) private func raw(_ start: Int, _ count: Int) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(start: b.baseAddress.unsafelyUnwrapped + start, count: count)
  }

  @inline(__always) private func contains(_ range: Range<Int>, _ byte: UInt8) -> Bool {
    range.isEmpty ? false : memchr(b.baseAddress! + range.lowerBound, Int32(byte), range.count) != nil
  }
  @inline(__always) private mutating func take(_ byte: UInt8) -> Bool {
    guard i < b.count, b[i] == byte else { return false }
    i += 1
    return true
  }
  @inline(__always) private mutating func take(_ text: StaticString) -> Bool {
    let n = text.utf8CodeUnitCount
    guard i + n <= b.count, memcmp(b.baseAddress! + i, text.utf8Start, n) == 0 else { return false }
    i += n
    return true
  }
}
