// Public: the inlinable comparisons call memcmp (libc, which OutboxSupport re-exports).
public import OutboxSupport

// Reading values out of a tape: typed scalars, decoded strings, byte comparison, `JSONValue`
// trees with exact capacities, and compact JSON written from the nodes.
extension JSONTape {
  /// The JSON type name used in error messages: null, boolean, integer, number, string, array, object.
  package func typeName(_ n: Int) -> String {
    switch lead(n) {
    case UInt8(ascii: "{"): "object"
    case UInt8(ascii: "["): "array"
    case UInt8(ascii: "\""): "string"
    case UInt8(ascii: "t"), UInt8(ascii: "f"): "boolean"
    case UInt8(ascii: "n"): "null"
    default: isIntegerText(n) ? "integer" : "number"
    }
  }

  /// True for a number token without fraction or exponent.
  package func isIntegerText(_ n: Int) -> Bool {
    let lead = self.lead(n)
    guard lead == UInt8(ascii: "-") || lead &- 48 < 10 else { return false }
    return !text(n).contains { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }
  }

  /// The value of an integer token that fits `Int64`, else nil (also for non-numbers).
  package func int64(_ n: Int) -> Int64? {
    let t = text(n)
    guard let p = t.baseAddress, isIntegerText(n) else { return nil }
    let negative = p[0] == UInt8(ascii: "-")
    var magnitude: UInt64 = 0
    for k in (negative ? 1 : 0)..<t.count {
      let (m1, o1) = magnitude.multipliedReportingOverflow(by: 10)
      let (m2, o2) = m1.addingReportingOverflow(UInt64(p[k] &- 48))
      if o1 || o2 { return nil }
      magnitude = m2
    }
    if !negative { return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil }
    if magnitude == 0 { return nil }  // -0 is a number, not an integer
    if magnitude == UInt64(Int64.max) + 1 { return .min }
    return magnitude <= UInt64(Int64.max) ? -Int64(magnitude) : nil
  }

  package func bool(_ n: Int) -> Bool? {
    switch lead(n) {
    case UInt8(ascii: "t"): true
    case UInt8(ascii: "f"): false
    default: nil
    }
  }

  /// Calls `body` with the decoded UTF-8 of string node `n`: the input bytes themselves when
  /// the string has no escapes.
  @usableFromInline
  package func withString<R>(_ n: Int, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
    let raw = rawContents(n)
    if !isEscaped(n) { return body(raw) }
    var out: [UInt8] = []
    JSONString.decode(raw, into: &out)
    return out.withUnsafeBufferPointer(body)
  }

  /// The decoded string of node `n`.
  package func string(_ n: Int) -> String {
    withString(n) { String(decoding: $0, as: UTF8.self) }
  }

  /// True when string node `n` holds exactly the code points of `word`.
  @inlinable @inline(__always)
  public func stringEquals(_ n: Int, _ word: StaticString) -> Bool {
    let node = nodes[n]
    let length = Int(node.end &- node.start) &- 2
    if node.aux & JSONNode.escaped == 0 {
      return length == word.utf8CodeUnitCount && memcmp(base + Int(node.start) + 1, word.utf8Start, length) == 0
    }
    return withString(n) {
      $0.count == word.utf8CodeUnitCount && memcmp($0.baseAddress!, word.utf8Start, $0.count) == 0
    }
  }

  /// True when string node `n` holds exactly the UTF-8 `bytes`.
  @inlinable @inline(__always)
  public func stringEquals(_ n: Int, bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    let node = nodes[n]
    if node.aux & JSONNode.escaped == 0 {
      let length = Int(node.end &- node.start) &- 2
      return length == bytes.count
        && (length == 0 || memcmp(base + Int(node.start) + 1, bytes.baseAddress!, length) == 0)
    }
    return withString(n) {
      $0.count == bytes.count && ($0.isEmpty || memcmp($0.baseAddress!, bytes.baseAddress!, $0.count) == 0)
    }
  }

  /// The value of key `key` in object `n` (the first, should it repeat).
  package func member(_ n: Int, _ key: StaticString) -> Int? {
    for (k, v) in members(n) where stringEquals(k, key) { return v }
    return nil
  }

  // MARK: - JSONValue

  /// The node as a `JSONValue` tree: arrays get exactly their member count, empty ones none.
  package func value(_ n: Int) -> JSONValue {
    switch lead(n) {
    case UInt8(ascii: "{"):
      if next(n) == n + 1 { return .object([]) }
      var members: [JSONMember] = []
      members.reserveCapacity(childCount(n))
      for (k, v) in self.members(n) { members.append(JSONMember(string(k), value(v))) }
      return .object(members)
    case UInt8(ascii: "["):
      if next(n) == n + 1 { return .array([]) }
      var items: [JSONValue] = []
      items.reserveCapacity(childCount(n))
      for (_, v) in elements(n) { items.append(value(v)) }
      return .array(items)
    case UInt8(ascii: "\""): return .string(string(n))
    case UInt8(ascii: "t"): return .bool(true)
    case UInt8(ascii: "f"): return .bool(false)
    case UInt8(ascii: "n"): return .null
    default:
      if let i = int64(n) { return .int(i) }
      return .number(String(decoding: text(n), as: UTF8.self))
    }
  }

  // MARK: - Writing

  /// Appends the compact JSON of node `n`, as `JSONWriter` would write its value: canonical text
  /// is copied as it is.
  package func encode(_ n: Int, into out: inout [UInt8]) {
    if isCanonical(n) {
      out.appendBytes(text(n))
      return
    }
    switch lead(n) {
    case UInt8(ascii: "\""):
      withString(n) { out.appendJSONString(utf8: $0) }
    case UInt8(ascii: "{"):
      out.append(UInt8(ascii: "{"))
      var first = true
      for (k, v) in members(n) {
        if !first { out.append(UInt8(ascii: ",")) }
        first = false
        encode(k, into: &out)
        out.append(UInt8(ascii: ":"))
        encode(v, into: &out)
      }
      out.append(UInt8(ascii: "}"))
    default:
      out.append(UInt8(ascii: "["))
      var first = true
      for (_, v) in elements(n) {
        if !first { out.append(UInt8(ascii: ",")) }
        first = false
        encode(v, into: &out)
      }
      out.append(UInt8(ascii: "]"))
    }
  }

  /// The dotted path of the first object below `n` (or `n` itself) holding a duplicate key, e.g. `properties.step`.
  package func duplicateKeyPath(_ n: Int, path: String = "") -> String? {
    if isObject(n) {
      if hasDuplicateKey(n), let key = firstDuplicateKey(n) { return joinPath(path, key) }
      for (k, v) in members(n) {
        if let found = duplicateKeyPath(v, path: joinPath(path, string(k))) { return found }
      }
    } else if isArray(n) {
      var index = 0
      for (_, v) in elements(n) {
        if let found = duplicateKeyPath(v, path: joinPath(path, index: index)) { return found }
        index += 1
      }
    }
    return nil
  }

  /// The first key of object `n` that an earlier key equals (by code points).
  package func firstDuplicateKey(_ n: Int) -> String? {
    var seen = Set<[UInt8]>()
    for (k, _) in members(n) {
      let bytes = withString(k) { Array($0) }
      if !seen.insert(bytes).inserted { return String(decoding: bytes, as: UTF8.self) }
    }
    return nil
  }
}
