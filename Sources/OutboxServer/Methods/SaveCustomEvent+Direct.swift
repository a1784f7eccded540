import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxStore
import OutboxSupport

/// The hot save read in one pass over its bytes, without a tape: a line that is exactly the compact,
/// canonical text of a `saveCustomEvent` request the fast path takes, with plain values.
///
/// It accepts only what it can decide at a glance, and what it accepts `FastSave.prepare`'s tape
/// reading accepts too, with the same body: an envelope of `jsonrpc` "2.0", an integer `id`
/// (0 to 18 digits' worth), `method` and `params`, each once, in any order, nothing around them;
/// params `name` (1 to 255 bytes, no escape, no leading `$`), optional `properties` and `user`;
/// properties whose keys pass every key rule on their raw bytes (no escape), each once, whose
/// values are numbers, booleans, strings of at most 255 bytes as sent, or arrays of those (no
/// string in an array that could be a date-time); a `user` in its wire form. Every string is
/// checked canonical (`CanonicalJSON`), so its text is what the tape path would write. Anything
/// else, whitespace included, gives nil, and the tape path reads the line and decides as it always
/// has. `DirectSaveTests` compares the two on seeded lines and their mutations.
enum DirectSave {
  /// Reads `line` and appends the item's members (without `time`) to `body`; nil, with `body`
  /// untouched, for anything it does not take.
  static func prepare(
    _ line: UnsafeBufferPointer<UInt8>, limits: FastSave.Limits, into body: inout [UInt8]
  ) -> FastSave? {
    // The deepest value taken is at depth 4: an alias, or an array in the properties.
    guard limits.maxDepth >= 4 else { return nil }
    let bytes = UnsafeRawBufferPointer(line)
    var scan = DirectScan(bytes)
    guard scan.request(maxPropertiesBytes: limits.domain.maxPropertiesBytes) else { return nil }
    let start = body.count
    let (user, properties) = (scan.user, scan.properties)
    let capacity = (user.map { 8 + $0.count } ?? 0) + 8 + scan.name.count + 14 + (properties?.count ?? 2)
    var userEnd = 0, labelEnd = 0  // from `start`
    // One capacity check and the pieces copied through a cursor (an append each cost some 70 instructions).
    ByteCursor.append(to: &body, capacity: capacity) { out in
      let base = line.baseAddress!
      if let user {
        out.put(",\"user\":")
        out.put(base + user.lowerBound, user.count)
      }
      userEnd = out.count
      out.put(",\"name\":")
      out.put(base + scan.name.lowerBound, scan.name.count)
      out.put(",\"properties\":")
      labelEnd = out.count
      if let properties {
        out.put(base + properties.lowerBound, properties.count)
      } else {
        out.put("{}")
      }
    }
    let parts = body.withUnsafeBytes {
      BodyParts(body: UnsafeRawBufferPointer(rebasing: $0[start...]), userEnd: userEnd, labelEnd: labelEnd)
    }
    return FastSave(id: .int(scan.id), hasUser: user != nil, parts: parts)
  }
}

/// The one pass of `DirectSave`: a cursor over the line and what it found. Each method reads one
/// part at the cursor and moves past it, or returns false (the line is left to the tape path).
struct DirectScan {
  /// The line, and the cursor: where the next part starts.
  let b: UnsafeRawBufferPointer
  var i = 0
  private(set) var id: Int64 = 0
  /// The name with its quotes, the properties object and the user object, as sent.
  private(set) var name = 0..<0
  private(set) var properties: Range<Int>? = nil
  private(set) var user: Range<Int>? = nil

  init(_ bytes: UnsafeRawBufferPointer) { b = bytes }

  /// The whole line: the envelope's four members, each once, and nothing after it. The order nearly
  /// every client writes is read straight through (`commonLayout`); any other, member by member,
  /// each key told by its first letter and matched whole with its colon (and `jsonrpc` with its
  /// value).
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

  /// An object whose members `member` reads, given the byte after each key's opening quote: it
  /// returns the member's bit, or nil to refuse. The bits seen, or nil for a member refused or
  /// repeated.
  @inline(__always)
  private mutating func members(_ member: (inout DirectScan, UInt8) -> UInt8?) -> UInt8? {
    guard take(UInt8(ascii: "{")) else { return nil }
    var seen: UInt8 = 0
    repeat {
      guard i + 1 < b.count, let bit = member(&self, b[i + 1]), seen & bit == 0 else { return nil }
      seen |= bit
    } while take(UInt8(ascii: ","))
    return take(UInt8(ascii: "}")) ? seen : nil
  }

  /// The event name: 1 to 255 bytes with no escape (so 255 characters at most), not starting with `$`.
  @inline(__always)
  private mutating func eventName() -> Bool {
    let start = i
    guard let contents = plainString(), !contents.isEmpty, b[contents.lowerBound] != UInt8(ascii: "$") else {
      return false
    }
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

  /// A property key and its colon: no escape, 1 to 255 bytes, no leading `$`, not `time` or
  /// `event_name` (every key rule, on the raw bytes); the key's contents.
  @inline(__always)
  private mutating func propertyKey() -> Range<Int>? {
    guard let key = plainString(), take(UInt8(ascii: ":")), !key.isEmpty,
      b[key.lowerBound] != UInt8(ascii: "$"), !isKey(key, "time"), !isKey(key, "event_name")
    else { return nil }
    return key
  }

  /// A property value: a string of at most 255 bytes as sent, a number, a boolean, or an array of
  /// those. Null, objects and nested arrays are left to the tape path (rules apply inside them).
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

  /// A string, number or boolean. In an array, a string that could be a date-time (16 bytes or
  /// more with `-` fifth, or escaped) is left to the tape path, where the rules look at it.
  @inline(__always)
  private mutating func scalar(inArray: Bool) -> Bool {
    guard i < b.count else { return false }
    switch b[i] {
    case 0x22:
      let start = i
      guard let (end, plain) = string(start), end - start - 2 <= 255 else { return false }
      i = end
      if inArray, end - start - 2 >= 16 {
        let contents = start + 1..<end - 1
        return (plain || !contains(contents, 0x5C)) && (contents.count > 40 || b[start + 5] != UInt8(ascii: "-"))
      }
      return true
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
}
