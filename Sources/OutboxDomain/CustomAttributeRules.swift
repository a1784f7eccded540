package import OutboxJSON

/// A custom attribute operation (`saveCustomAttribute` `op`), after `user_attributes_object.md`:
/// a plain value, `{"inc": n}`, `{"add": [...]}`, `{"remove": [...]}`, or `null`.
package enum AttributeOp: String, Sendable, CaseIterable {
  case set, inc, add, remove, unset
}

/// Braze's rules for custom attribute keys and values.
///
/// Sources: key and string length 255 (`custom_attributes.md`, `ABKUser.h`); types (`user_attributes_object.md`,
/// `custom_attributes.md`); "Only integer and long custom attributes can be incremented" (`ABKUser.h`);
/// arrays unique, capped, oldest dropped first (`setting_user_attributes.md`, `custom_attributes.md`);
/// nested objects per `nested_custom_attribute_support.md` (see `NestedAttribute`); reserved operators from the
/// Web SDK `validation-utils.js` `CUSTOM_ATTRIBUTE_RESERVED_OPERATORS`.
///
/// Policy (domain.md §7): a leading `$` is allowed on top-level keys (the Swift SDK allows it since 6.6.2/7.6.0)
/// except for the reserved operator names. Keys are never truncated, whatever `--strings` says.
package enum CustomAttributeRules {
  /// `CUSTOM_ATTRIBUTE_RESERVED_OPERATORS` (Braze Web SDK `validation-utils.js`).
  static let reservedOperators: Set<String> = [
    "$add", "$update", "$remove", "$identifier_key", "$identifier_value", "$new_object", "$time",
    "$google_ad_personalization", "$google_ad_user_data",
  ]

  /// Keys that a `/users/track` attributes object already uses for something else: identifiers, flags and
  /// profile fields that `saveUserAttribute` does not set (`user_attributes_object.md`). A custom attribute
  /// with one of these names would overwrite them.
  static let reservedKeys: Set<String> = [
    "external_id", "braze_id", "user_alias", "app_id", "_update_existing_only", "_merge_objects",
    "push_token_import", "subscription_groups", "push_tokens", "current_location", "date_of_first_session",
    "date_of_last_session", "marked_email_as_spam_at", "email_open_tracking_disabled",
    "email_click_tracking_disabled", "facebook", "twitter",
  ]

  /// Checks a custom attribute save and returns the normalized value to store.
  ///
  /// - set: string (≤255, `--strings`), integer, number, boolean, datetime string, array of strings
  ///   (see `stringArray`), array of objects, or nested object (`NestedAttribute`). Null is refused: use `unset`.
  /// - inc: an integer. - add/remove: an array of strings. - unset: null.
  ///
  /// Error codes: `key_empty`, `key_too_long`, `reserved_user_field`, `reserved_key`, `wrong_type`,
  /// `string_too_long`, `invalid_array_element`, plus the nested ones. Warnings: `array_truncated`,
  /// `array_duplicates_removed`, `string_truncated`.
  package static func check(
    key: String, op: AttributeOp, value: JSONValue, limits: DomainLimits, issues: inout Issues
  ) -> JSONValue {
    checkKey(key, issues: &issues)
    switch op {
    case .set:
      return setValue(value, limits: limits, issues: &issues)
    case .inc:
      if case .int = value { return value }
      if case .number(let text) = value, JSONValue.isIntegerText(text), text != "-0" {
        issues.errors.append(
          Issue(
            path: "value", code: "out_of_range", message: "op inc takes an integer from \(Int64.min) to \(Int64.max)",
            extra: [JSONMember("min", .int(.min)), JSONMember("max", .int(.max))]))
        return value
      }
      issues.error(
        "value", "wrong_type", "op inc takes an integer (Braze increments only integers), not \(value.typeName)")
      return value
    case .add, .remove:
      guard case .array(let items) = value else {
        issues.error("value", "wrong_type", "op \(op.rawValue) takes an array of strings, not \(value.typeName)")
        return value
      }
      return .array(stringArray(items, limits: limits, issues: &issues))
    case .unset:
      if !value.isNull {
        issues.error("value", "wrong_type", "op unset takes null (or no value), not \(value.typeName)")
      }
      return .null
    }
  }

  static func checkKey(_ key: String, issues: inout Issues) {
    if key.isEmpty {
      issues.error("key", "key_empty", "the attribute key must not be empty")
    } else if !TextLimit.fits(key) {
      issues.error(
        "key", "key_too_long",
        "the key has \(TextLimit.characterCount(key)) characters; Braze allows at most \(TextLimit.maxCharacters)")
    }
    if key.isASCII, UserField(rawValue: key) != nil {
      issues.error(
        "key", "reserved_user_field",
        "\"\(key)\" is a default Braze user field; use saveUserAttribute with field \"\(key)\"")
    } else if key.isASCII, reservedOperators.contains(key) {
      issues.error("key", "reserved_key", "\"\(key)\" is a reserved Braze operator")
    } else if key.isASCII, reservedKeys.contains(key) {
      issues.error("key", "reserved_key", "\"\(key)\" is reserved in Braze's /users/track attributes object")
    }
  }

  static func setValue(_ value: JSONValue, limits: DomainLimits, issues: inout Issues) -> JSONValue {
    switch value {
    case .null:
      issues.error("value", "wrong_type", "op set takes a value; to remove the attribute use op unset")
    case .bool, .int, .number:
      break
    case .string(let s):
      if let cut = TextLimit.checkValue(s, path: { "value" }, policy: limits.strings, issues: &issues) {
        return .string(cut)
      }
    case .array(let items):
      if items.allSatisfy({ $0.objectValue != nil }) && !items.isEmpty {
        return NestedAttribute.check(value, path: "value", limits: limits, issues: &issues)
      }
      return .array(stringArray(items, limits: limits, issues: &issues))
    case .object:
      return NestedAttribute.check(value, path: "value", limits: limits, issues: &issues)
    }
    return value
  }

  /// An array of strings: every element a string (≤255, `--strings`); duplicates removed keeping the first
  /// (warning `array_duplicates_removed`); over `arrayLimit`, the newest (last) elements kept (warning `array_truncated`).
  static func stringArray(_ items: [JSONValue], limits: DomainLimits, issues: inout Issues) -> [JSONValue] {
    var result = items
    for i in items.indices {
      guard case .string(let s) = items[i] else {
        issues.error(
          joinPath("value", index: i), "invalid_array_element",
          "array elements must all be strings (or all objects), not \(items[i].typeName)")
        continue
      }
      if let cut = TextLimit.checkValue(
        s, path: { joinPath("value", index: i) }, policy: limits.strings, issues: &issues)
      {
        result[i] = .string(cut)
      }
    }
    let unique = dedupe(result)
    if unique.count < result.count {
      issues.warn(
        "value", "array_duplicates_removed",
        "\(result.count - unique.count) duplicate elements were removed (Braze keeps array elements unique)")
    }
    let limit = max(0, limits.arrayLimit)
    guard unique.count > limit else { return unique }
    issues.warn(
      "value", "array_truncated",
      "the array has \(unique.count) elements; the newest \(limit) were kept (--array-limit)")
    return Array(unique.suffix(limit))
  }

  /// `items` without repeats, first occurrence kept, order otherwise unchanged.
  static func dedupe(_ items: [JSONValue]) -> [JSONValue] {
    if items.count < 2 { return items }
    var seen = Set<JSONValue>(minimumCapacity: items.count)
    var out: [JSONValue] = []
    out.reserveCapacity(items.count)
    for item in items where seen.insert(item).inserted { out.append(item) }
    return out.count == items.count ? items : out
  }
}
