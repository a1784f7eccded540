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
package enum CustomEventRules {
  /// "up to 256 distinct custom event properties" (`custom_events.md`).
  package static let maxProperties = 256

  /// Checks `name` and `properties`, adding every problem to `issues`.
  ///
  /// Error codes: `name_empty`, `name_too_long`, `name_dollar_prefix`, `too_many_properties`,
  /// `properties_too_large`, `key_empty`, `key_too_long`, `key_dollar_prefix`, `reserved_property_key`,
  /// `null_value`, `string_too_long`, `datetime_in_array`, `invalid_array_element`.
  /// Warning (with `--strings truncate`): `string_truncated`.
  ///
  /// Returns the properties to store, in order: `properties` itself unless a string was truncated.
  package static func check(
    name: String, properties: [JSONMember], limits: DomainLimits, issues: inout Issues
  ) -> [JSONMember] {
    checkName(name, issues: &issues)
    if properties.count > maxProperties {
      issues.error("properties", "too_many_properties", "\(properties.count) properties; Braze allows at most \(maxProperties)")
    }
    var replaced: [JSONMember]? = nil  // a copy is made only when a value changes
    var bound = 2  // an upper bound of the compact size, O(1) per scalar value
    let policy = limits.strings
    for i in properties.indices {
      let key = properties[i].key
      checkKey(key, parent: { "properties" }, topLevel: true, issues: &issues)
      bound += JSONSize.stringBound(key) + 2
      if let value = EventValue.check(
        properties[i].value, path: { joinPath("properties", key) }, policy: policy, bound: &bound, issues: &issues)
      {
        if replaced == nil { replaced = properties }
        replaced![i].value = value
      }
    }
    let result = replaced ?? properties
    if bound > limits.maxPropertiesBytes {
      let size = JSONSize.object(result)
      if size > limits.maxPropertiesBytes {
        issues.error("properties", "properties_too_large", "properties take \(size) bytes as compact JSON; the limit is \(limits.maxPropertiesBytes)")
      }
    }
    return result
  }

  /// Checks the optional `time` param: an ISO 8601 date-time (see `ISO8601`), as milliseconds
  /// since the epoch. Otherwise adds `invalid_time` at path `time` and returns nil.
  package static func checkTime(_ time: String, issues: inout Issues) -> Int64? {
    if let ms = ISO8601.parseDateTime(time) { return ms }
    issues.error("time", "invalid_time", "time must be an ISO 8601 date-time such as 2026-01-02T03:04:05.678Z")
    return nil
  }

  static func checkName(_ name: String, issues: inout Issues) {
    if name.isEmpty {
      issues.error("name", "name_empty", "the event name must not be empty")
    } else if !TextLimit.fits(name) {
      issues.error("name", "name_too_long", "the event name has \(TextLimit.characterCount(name)) characters; Braze allows at most \(TextLimit.maxCharacters)")
    }
    if name.utf8.first == UInt8(ascii: "$") {
      issues.error("name", "name_dollar_prefix", "the event name must not start with $")
    }
  }

  /// The key rules for top-level and nested property keys; `time` and `event_name` are reserved at the top level only.
  static func checkKey(_ key: String, parent: () -> String, topLevel: Bool, issues: inout Issues) {
    if key.isEmpty {
      issues.error(parent(), "key_empty", "property keys must not be empty")
      return
    }
    if !TextLimit.fits(key) {
      issues.error(joinPath(parent(), key), "key_too_long", "the key has \(TextLimit.characterCount(key)) characters; Braze allows at most \(TextLimit.maxCharacters)")
    }
    if key.utf8.first == UInt8(ascii: "$") {
      issues.error(joinPath(parent(), key), "key_dollar_prefix", "property keys must not start with $")
    }
    if topLevel && (key == "time" || key == "event_name") {
      issues.error(joinPath(parent(), key), "reserved_property_key", "\"\(key)\" is reserved by Braze and cannot be a property key")
    }
  }
}

/// Value rules for event properties, recursive through nested objects and arrays.
enum EventValue {
  /// Checks one value; returns a replacement only when a string inside it was truncated.
  /// `bound` grows by an upper bound of the value's compact JSON size.
  static func check(
    _ value: JSONValue, path: () -> String, policy: StringPolicy, bound: inout Int, issues: inout Issues
  ) -> JSONValue? {
    switch value {
    case .null:
      bound += 4
      issues.error(path(), "null_value", "null is not a property value; leave the property out instead")
    case .bool: bound += 5
    case .int: bound += 20
    case .number(let text): bound += text.utf8.count
    case .string(let s):
      bound += JSONSize.stringBound(s)
      return TextLimit.checkValue(s, path: path, policy: policy, issues: &issues).map(JSONValue.string)
    case .array(let items):
      return array(items, path: path, policy: policy, bound: &bound, issues: &issues).map(JSONValue.array)
    case .object(let members):
      return object(members, path: path, policy: policy, bound: &bound, issues: &issues).map(JSONValue.object)
    }
    return nil
  }

  /// A nested object: keys follow the key rules (no reserved names below the top level).
  static func object(
    _ members: [JSONMember], path: () -> String, policy: StringPolicy, bound: inout Int, issues: inout Issues
  ) -> [JSONMember]? {
    var replaced: [JSONMember]? = nil
    bound += 2
    for i in members.indices {
      let key = members[i].key
      CustomEventRules.checkKey(key, parent: path, topLevel: false, issues: &issues)
      bound += JSONSize.stringBound(key) + 2
      if let value = check(members[i].value, path: { joinPath(path(), key) }, policy: policy, bound: &bound, issues: &issues) {
        if replaced == nil { replaced = members }
        replaced![i].value = value
      }
    }
    return replaced
  }

  /// An array: scalars or objects, no nulls, no nested arrays, no datetimes ("Not supported within arrays", `event_object.md`).
  static func array(
    _ items: [JSONValue], path: () -> String, policy: StringPolicy, bound: inout Int, issues: inout Issues
  ) -> [JSONValue]? {
    var replaced: [JSONValue]? = nil
    bound += 2
    for i in items.indices {
      switch items[i] {
      case .null, .array:
        bound += items[i].encodedJSONSize + 1
        let kind = items[i].typeName
        issues.error(joinPath(path(), index: i), "invalid_array_element", "array elements must be strings, numbers, booleans or objects, not \(kind)")
        continue
      case .string(let s) where looksLikeDateTime(s):
        issues.error(joinPath(path(), index: i), "datetime_in_array", "Braze does not support datetimes inside arrays")
      default: break
      }
      bound += 1
      if let value = check(items[i], path: { joinPath(path(), index: i) }, policy: policy, bound: &bound, issues: &issues) {
        if replaced == nil { replaced = items }
        replaced![i] = value
      }
    }
    return replaced
  }

  /// A string Braze would read as a datetime: a full ISO 8601 date-time.
  static func looksLikeDateTime(_ s: String) -> Bool {
    let u = s.utf8
    guard u.count >= 16, u.count <= 40, u.dropFirst(4).first == UInt8(ascii: "-") else { return false }
    return ISO8601.parseDateTime(s) != nil
  }
}
