import OutboxJSON
import OutboxSupport

/// Rules for nested custom attributes (objects and arrays of objects), after
/// `nested_custom_attribute_support.md`: the object is at most 100 KB (`--max-nested-attribute-bytes`
/// in `DomainLimits`); "Key names and string values have a size limit of 255 characters"; "Key names
/// cannot contain spaces"; "Periods (.) and dollar signs ($) aren't supported"; dates are written
/// `{"$time": "<ISO 8601>"}` and years below 0 or above 3000 are not stored; and any invalid part
/// (an invalid `$time`, a null) drops the whole attribute (`post_user_track.md` FAQ).
/// Depth is capped at 50 like the Web SDK (`validation-utils.js`).
///
/// Every problem is an error, so the whole attribute is rejected; only over-long strings may be
/// truncated instead, under `--strings truncate`.
enum NestedAttribute {
  /// The Web SDK's nesting cap.
  static let maxDepth = 50
  /// Years Braze stores for `$time` dates.
  static let yearRange = 0...3000

  /// Checks an object or an array of objects at `path` and returns it, with truncated strings if any.
  ///
  /// Error codes: `key_empty`, `key_too_long`, `invalid_nested_key`, `null_in_object`, `invalid_time`,
  /// `object_too_deep`, `object_too_large`, `string_too_long`.
  static func check(_ value: JSONValue, path: String, limits: DomainLimits, issues: inout Issues) -> JSONValue {
    let result = walk(value, path: { path }, depth: 0, policy: limits.strings, issues: &issues) ?? value
    let size = result.encodedJSONSize
    if size > limits.maxNestedAttributeBytes {
      issues.error(
        path, "object_too_large",
        "the nested attribute takes \(size) bytes as compact JSON; Braze allows \(limits.maxNestedAttributeBytes)")
    }
    return result
  }

  /// Checks one value; returns a replacement only when a string inside was truncated.
  private static func walk(
    _ value: JSONValue, path: () -> String, depth: Int, policy: StringPolicy, issues: inout Issues
  ) -> JSONValue? {
    switch value {
    case .null:
      issues.error(
        path(), "null_in_object", "nested attributes must not hold null (Braze would drop the whole attribute)")
    case .bool, .int, .number:
      break
    case .string(let s):
      return TextLimit.checkValue(s, path: path, policy: policy, issues: &issues).map(JSONValue.string)
    case .array(let items):
      guard enter(depth, path: path, issues: &issues) else { return nil }
      var replaced: [JSONValue]? = nil
      for i in items.indices {
        if let v = walk(
          items[i], path: { joinPath(path(), index: i) }, depth: depth + 1, policy: policy, issues: &issues)
        {
          if replaced == nil { replaced = items }
          replaced![i] = v
        }
      }
      return replaced.map(JSONValue.array)
    case .object(let members):
      guard enter(depth, path: path, issues: &issues) else { return nil }
      if members.count == 1, members[0].key == "$time" {
        checkTime(members[0].value, path: { joinPath(path(), "$time") }, issues: &issues)
        return nil
      }
      return object(members, path: path, depth: depth, policy: policy, issues: &issues).map(JSONValue.object)
    }
    return nil
  }

  private static func object(
    _ members: [JSONMember], path: () -> String, depth: Int, policy: StringPolicy, issues: inout Issues
  ) -> [JSONMember]? {
    var replaced: [JSONMember]? = nil
    for i in members.indices {
      let key = members[i].key
      checkKey(key, parent: path, issues: &issues)
      if let v = walk(
        members[i].value, path: { joinPath(path(), key) }, depth: depth + 1, policy: policy, issues: &issues)
      {
        if replaced == nil { replaced = members }
        replaced![i].value = v
      }
    }
    return replaced
  }

  private static func enter(_ depth: Int, path: () -> String, issues: inout Issues) -> Bool {
    if depth < maxDepth { return true }
    issues.error(path(), "object_too_deep", "nested attributes may be at most \(maxDepth) levels deep")
    return false
  }

  /// Nested keys: non-empty, ≤255 characters, no whitespace, `.` or `$`.
  static func checkKey(_ key: String, parent: () -> String, issues: inout Issues) {
    if key.isEmpty {
      issues.error(parent(), "key_empty", "nested keys must not be empty")
      return
    }
    if !TextLimit.fits(key) {
      issues.error(
        joinPath(parent(), key), "key_too_long",
        "the key has \(TextLimit.characterCount(key)) characters; Braze allows at most \(TextLimit.maxCharacters)")
    }
    if key.unicodeScalars.contains(where: { $0 == "." || $0 == "$" || $0.properties.isWhitespace }) {
      issues.error(
        joinPath(parent(), key), "invalid_nested_key",
        "nested keys must not contain spaces, \".\" or \"$\" (dates are written {\"$time\": ISO 8601})")
    }
  }

  /// `{"$time": "..."}`: an ISO 8601 date-time (or a `YYYY-MM-DD` date) in years 0–3000.
  private static func checkTime(_ value: JSONValue, path: () -> String, issues: inout Issues) {
    if case .string(let s) = value {
      let ms = ISO8601.parseDateTime(s) ?? (ISO8601.isDate(s) ? ISO8601.parseDateTime(s + "T00:00Z") : nil)
      if let ms, yearRange.contains(ISO8601.year(ms: ms)) { return }
    }
    issues.error(
      path(), "invalid_time",
      "$time must be an ISO 8601 date-time in the years 0–3000 (Braze drops the whole attribute otherwise)")
  }
}
