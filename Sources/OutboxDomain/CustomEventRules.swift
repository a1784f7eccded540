package import OutboxJSON
import OutboxSupport

/// Braze's rules for a custom event: its name, its properties and its time.
///
/// Sources: "Use up to 255 characters. Do not start the name with $" (`logging_events`);
/// property keys are "non-empty strings less than or equal to 255 characters, with no leading
/// dollar signs" and `time`, `event_name` are reserved (`event_object.md`, `custom_events.md`,
/// `Appboy.h`); values per `event_object.md`; "up to 256 distinct custom event properties"
/// (`custom_events.md`); the size cap per domain.md §7 (`--max-properties-bytes`).
///
/// Names and keys that break a rule are always errors; only string *values* follow `--strings`.
/// A null value is an error: no Braze source lists null as a property type (domain.md §5 row 17).
public enum CustomEventRules {
  /// "up to 256 distinct custom event properties" (`custom_events.md`).
  static let maxProperties = 256

  /// Checks `name` and `properties`, adding every problem to `issues` (a tree-based entry point over
  /// `checkName` and `checkProperties`, which are the rules).
  ///
  /// Returns the properties to store, in order: `properties` itself unless a string was truncated.
  package static func check(
    name: String, properties: [JSONMember], limits: DomainLimits, issues: inout Issues
  ) -> [JSONMember] {
    let nameBytes = JSONValue.string(name).jsonBytes
    let propertyBytes = JSONValue.object(properties).jsonBytes
    var out: [UInt8] = []
    nameBytes.withUnsafeBufferPointer { nameBuffer in
      propertyBytes.withUnsafeBufferPointer { buffer in
        guard let nameTape = try? JSONTape(nameBuffer), let tape = try? JSONTape(buffer, maxDepth: 1000) else { return }
        checkName(nameTape, nameTape.root, issues: &issues)
        checkProperties(tape, tape.root, limits: limits, issues: &issues, into: &out)
      }
    }
    return (try? JSONReader.parse(out, maxDepth: 1000))?.objectValue ?? properties
  }

  /// Checks the properties object at node `n` and appends its compact JSON to `out`: the input
  /// text itself when it is canonical and nothing was truncated.
  ///
  /// Error codes: `too_many_properties`, `properties_too_large`, `key_empty`, `key_too_long`,
  /// `key_dollar_prefix`, `reserved_property_key`, `null_value`, `string_too_long`,
  /// `datetime_in_array`, `invalid_array_element`. Warning (with `--strings truncate`): `string_truncated`.
  package static func checkProperties(
    _ tape: JSONTape, _ n: Int, limits: DomainLimits, issues: inout Issues, into out: inout [UInt8]
  ) {
    var truncated = false
    var count = 0
    var keyIssues = Issues()
    for (k, v) in tape.members(n) {
      count += 1
      if EventValue.isPlainScalar(tape, v), isPlainKey(tape, k) { continue }  // the common case, no calls
      checkKey(tape, k, parent: { "properties" }, topLevel: true, issues: &keyIssues)
      EventValue.check(
        tape, v, path: { [unowned(unsafe) tape] in joinPath("properties", tape.string(k)) }, policy: limits.strings,
        truncated: &truncated, issues: &keyIssues)
    }
    if count > maxProperties {
      issues.error("properties", "too_many_properties", "\(count) properties; Braze allows at most \(maxProperties)")
    }
    if !keyIssues.errors.isEmpty { issues.errors += keyIssues.errors }
    if !keyIssues.warnings.isEmpty { issues.warnings += keyIssues.warnings }
    let start = out.count
    if truncated { EventValue.writeTruncated(tape, n, into: &out) } else { tape.encode(n, into: &out) }
    let size = out.count - start
    if size > limits.maxPropertiesBytes {
      issues.error(
        "properties", "properties_too_large",
        "properties take \(size) bytes as compact JSON; the limit is \(limits.maxPropertiesBytes)")
    }
  }

  /// A top-level key that passes every key rule, decided on its raw bytes (`isPlainKey(_:topLevel:)`).
  /// False means "check it", not "invalid".
  @inline(__always)
  static func isPlainKey(_ tape: JSONTape, _ k: Int) -> Bool {
    !tape.isEscaped(k) && isPlainKey(UnsafeRawBufferPointer(tape.rawContents(k)), topLevel: true)
  }

  // MARK: - The rules on raw bytes
  //
  // Each rule on names and keys has its home here; the tape checks above and the server's one-pass
  // scan (`OneScanSave`) both ask these. They take a string's contents as sent, without escapes,
  // so a byte count bounds the character count. `public @inlinable`, so the scan inlines them.

  /// An event name that passes every name rule, decided on its raw bytes (no escape): not empty,
  /// fits without counting (`TextLimit.fitsUncounted`), no leading `$`. False means "check it".
  @inlinable @inline(__always)
  public static func isPlainName(_ raw: UnsafeRawBufferPointer) -> Bool {
    raw.count > 0 && TextLimit.fitsUncounted(byteCount: raw.count) && raw[0] != UInt8(ascii: "$")
  }

  /// A property key that passes every key rule, decided on its raw bytes (no escape): not empty,
  /// fits without counting, no leading `$`, and at the top level not reserved (`isReservedKey`).
  /// False means "check it", not "invalid".
  @inlinable @inline(__always)
  public static func isPlainKey(_ raw: UnsafeRawBufferPointer, topLevel: Bool) -> Bool {
    raw.count > 0 && TextLimit.fitsUncounted(byteCount: raw.count) && raw[0] != UInt8(ascii: "$")
      && !(topLevel && isReservedKey(raw))
  }

  /// `time` and `event_name`, reserved as top-level property keys (compared by code points: their
  /// UTF-8 bytes, read as little-endian words).
  @inlinable @inline(__always)
  public static func isReservedKey(_ raw: UnsafeRawBufferPointer) -> Bool {
    switch raw.count {
    case 4:  // "time"
      UInt32(littleEndian: raw.loadUnaligned(as: UInt32.self)) == 0x656D_6974
    case 10:  // "event_name": "event_na", then "me"
      UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self)) == 0x616E_5F74_6E65_7665
        && UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt16.self)) == 0x656D
    default: false
    }
  }

  /// A string in an array that Braze might read as a date-time (`datetime_in_array`), decided on its
  /// raw bytes: 16 to 40 bytes with `-` fifth, or escaped and 16 bytes or more (escapes only
  /// shorten the text). False: it is no date-time. True means "check it" (`looksLikeDateTime`).
  @inlinable @inline(__always)
  public static func mayBeDateTime(_ raw: UnsafeRawBufferPointer, escaped: @autoclosure () -> Bool) -> Bool {
    guard raw.count >= 16 else { return false }
    return (raw.count <= 40 && raw[4] == UInt8(ascii: "-")) || escaped()
  }

  /// Checks the optional `time` param: an ISO 8601 date-time (see `ISO8601`), as milliseconds
  /// since the epoch. Otherwise adds `invalid_time` at path `time` and returns nil.
  package static func checkTime(_ time: String, issues: inout Issues) -> Int64? {
    if let ms = ISO8601.parseDateTime(time) { return ms }
    issues.error("time", "invalid_time", "time must be an ISO 8601 date-time such as 2026-01-02T03:04:05.678Z")
    return nil
  }

  /// Checks the event name at string node `n`.
  package static func checkName(_ tape: JSONTape, _ n: Int, issues: inout Issues) {
    tape.withString(n) { name in
      if name.isEmpty {
        issues.error("name", "name_empty", "the event name must not be empty")
      } else if !TextLimit.fits(name) {
        issues.error(
          "name", "name_too_long",
          "the event name has \(TextLimit.characterCount(name)) characters; Braze allows at most \(TextLimit.maxCharacters)"
        )
      }
      if name.first == UInt8(ascii: "$") {
        issues.error("name", "name_dollar_prefix", "the event name must not start with $")
      }
    }
  }

  /// The key rules for top-level and nested property keys (string node `k`); `time` and `event_name`
  /// are reserved at the top level only. Keys compare by code points.
  static func checkKey(_ tape: JSONTape, _ k: Int, parent: () -> String, topLevel: Bool, issues: inout Issues) {
    if !tape.isEscaped(k), isPlainKey(UnsafeRawBufferPointer(tape.rawContents(k)), topLevel: topLevel) {
      return  // the common case, decided on the raw bytes
    }
    tape.withString(k) { key in
      if key.isEmpty {
        issues.error(parent(), "key_empty", "property keys must not be empty")
        return
      }
      if !TextLimit.fits(key) {
        issues.error(
          joinPath(parent(), tape.string(k)), "key_too_long",
          "the key has \(TextLimit.characterCount(key)) characters; Braze allows at most \(TextLimit.maxCharacters)")
      }
      if key.first == UInt8(ascii: "$") {
        issues.error(joinPath(parent(), tape.string(k)), "key_dollar_prefix", "property keys must not start with $")
      }
      if topLevel && isReservedKey(UnsafeRawBufferPointer(key)) {
        let name = tape.string(k)
        issues.error(
          joinPath(parent(), name), "reserved_property_key",
          "\"\(name)\" is reserved by Braze and cannot be a property key")
      }
    }
  }
}

/// Value rules for event properties, recursive through nested objects and arrays.
enum EventValue {
  /// A value no rule can refuse: a number, a boolean, or an unescaped string of at most 255 bytes.
  @inline(__always)
  static func isPlainScalar(_ tape: JSONTape, _ n: Int) -> Bool {
    let lead = tape.lead(n)
    if lead == UInt8(ascii: "\"") {
      return !tape.isEscaped(n) && TextLimit.fitsUncounted(byteCount: tape.rawContents(n).count)
    }
    return lead == UInt8(ascii: "t") || lead == UInt8(ascii: "f") || lead == UInt8(ascii: "-") || lead &- 48 < 10
  }

  /// Checks the value at node `n`; sets `truncated` when a string inside it must be cut (`--strings truncate`).
  static func check(
    _ tape: JSONTape, _ n: Int, path: () -> String, policy: StringPolicy, truncated: inout Bool, issues: inout Issues
  ) {
    let lead = tape.lead(n)
    if lead == UInt8(ascii: "\""), !tape.isEscaped(n), TextLimit.fitsUncounted(byteCount: tape.rawContents(n).count) {
      return
    }
    switch lead {
    case UInt8(ascii: "n"):
      issues.error(path(), "null_value", "null is not a property value; leave the property out instead")
    case UInt8(ascii: "\""):
      if tape.withString(n, { TextLimit.check($0, path: path, policy: policy, issues: &issues) }) { truncated = true }
    case UInt8(ascii: "["):
      var i = 0
      for (_, v) in tape.elements(n) {
        defer { i += 1 }
        let index = i
        if tape.isNull(v) || tape.isArray(v) {
          issues.error(
            joinPath(path(), index: index), "invalid_array_element",
            "array elements must be strings, numbers, booleans or objects, not \(tape.typeName(v))")
          continue
        }
        if tape.isString(v), tape.withString(v, looksLikeDateTime) {
          issues.error(
            joinPath(path(), index: index), "datetime_in_array", "Braze does not support datetimes inside arrays")
        }
        check(tape, v, path: { joinPath(path(), index: index) }, policy: policy, truncated: &truncated, issues: &issues)
      }
    case UInt8(ascii: "{"):
      for (k, v) in tape.members(n) {
        CustomEventRules.checkKey(tape, k, parent: path, topLevel: false, issues: &issues)
        check(
          tape, v, path: { joinPath(path(), tape.string(k)) }, policy: policy, truncated: &truncated, issues: &issues)
      }
    default: break
    }
  }

  /// Writes node `n` compactly with every string over the limit cut to `TextLimit.maxCharacters`.
  static func writeTruncated(_ tape: JSONTape, _ n: Int, into out: inout [UInt8]) {
    switch tape.lead(n) {
    case UInt8(ascii: "\""):
      if tape.withString(n, { TextLimit.fits($0) }) {
        tape.encode(n, into: &out)
      } else {
        out.appendJSONString(TextLimit.truncate(tape.string(n)))
      }
    case UInt8(ascii: "{"):
      out.append(UInt8(ascii: "{"))
      for (index, (k, v)) in tape.members(n).enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        tape.encode(k, into: &out)
        out.append(UInt8(ascii: ":"))
        writeTruncated(tape, v, into: &out)
      }
      out.append(UInt8(ascii: "}"))
    case UInt8(ascii: "["):
      out.append(UInt8(ascii: "["))
      for (index, (_, v)) in tape.elements(n).enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        writeTruncated(tape, v, into: &out)
      }
      out.append(UInt8(ascii: "]"))
    default: tape.encode(n, into: &out)
    }
  }

  /// A string Braze would read as a datetime: a full ISO 8601 date-time.
  static func looksLikeDateTime(_ s: UnsafeBufferPointer<UInt8>) -> Bool {
    guard CustomEventRules.mayBeDateTime(UnsafeRawBufferPointer(s), escaped: false) else { return false }
    return ISO8601.parseDateTime(bytes: s) != nil
  }

  static func looksLikeDateTime(_ s: String) -> Bool {
    var copy = s
    return copy.withUTF8 { looksLikeDateTime($0) }
  }
}
