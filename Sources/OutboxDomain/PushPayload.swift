package import OutboxJSON

/// `parsePayload`: reads an iOS push `userInfo` the way Braze's SDK does.
///
/// Sources: `ab` non-empty object means Braze's push, `appboy_uninstall_tracking` and `ab.ab_carousel` are
/// read with Objective-C `boolValue`, `content-available` with `intValue`
/// (`braze-swift-sdk:Sources/BrazeKitCompat/AppboyKit/ABKPushUtils.m`); `ab.att {url, type}`
/// (`rich_notifications.md`); `ab_uri` (`reading_verbose_logs.md`); `braze_id` (`logging_message_data.md`);
/// extras at the top level (`key_value_pairs.md`); the 4096-byte APNs limit (`key_value_pairs.md`).
///
/// Decisions: `silent` is `aps.content-available == 1` as the wire spec says, without also requiring `ab`
/// (`ABKPushUtils` does both; a client can combine `silent` and `braze`). Warnings go into the result's
/// `warnings` member only, not into `issues.warnings`.
package enum PushPayload {
  /// APNs: "any individual payload you send to APNs cannot exceed a size of 4096 bytes" (`key_value_pairs.md`).
  static let apnsLimit = 4096
  /// Top-level keys that are not extras.
  static let reservedKeys: Set<String> = ["aps", "ab", "ab_uri", "braze_id"]

  /// Parses a push payload (see the wire spec for the result shape; absent fields are null).
  ///
  /// Errors: `payload` `wrong_type` | `invalid_json`; `require`/`categories` `wrong_type` | `unknown_type`;
  /// `payload.KEY` `missing` | `wrong_type` | `invalid` with extra members `key`, `expected`, `got`.
  /// Warnings (in the result): `liquid_unrendered`, `empty_required_value`, `braze_id_not_string`,
  /// `braze_id_empty`, `category_not_registered`, `payload_too_large`.
  /// Returns null when the payload is not an object.
  package static func parse(
    payload: JSONValue, require: JSONValue?, categories: JSONValue?, issues: inout Issues
  ) -> JSONValue {
    let specs = PayloadRequire.specs(require, issues: &issues)
    let registered = categoryList(categories, issues: &issues)
    guard let members = object(payload, issues: &issues) else { return .null }
    var warnings: [JSONValue] = []
    liquidWarnings(members, into: &warnings)
    let values = requiredValues(members, specs: specs, issues: &issues, warnings: &warnings)
    let aps = members["aps"]?.objectValue ?? []
    let ab = members["ab"]?.objectValue
    let brazeId = brazeID(members["braze_id"], warnings: &warnings)
    let category = aps["category"]?.stringValue
    if let category, let registered, !registered.contains(where: { sameText($0, category) }) {
      warnings.append(
        warning("category_not_registered", nil, "category \"\(category)\" is not among the registered categories"))
    }
    let size = JSONSize.object(members)
    if size > apnsLimit {
      warnings.append(
        warning("payload_too_large", nil, "the payload takes \(size) bytes as compact JSON; APNs allows \(apnsLimit)"))
    }
    return .object([
      JSONMember("braze", .bool(!(ab?.isEmpty ?? true))),
      JSONMember("silent", .bool(ObjC.intValue(aps["content-available"]) == 1)),
      JSONMember("internal", .bool(ObjC.boolValue(members["appboy_uninstall_tracking"]))),
      JSONMember("pushStory", .bool(ObjC.boolValue(ab?["ab_carousel"]))),
      JSONMember("category", category.map(JSONValue.string) ?? .null),
      JSONMember("threadId", aps["thread-id"]?.stringValue.map(JSONValue.string) ?? .null),
      JSONMember("mutableContent", .bool(ObjC.intValue(aps["mutable-content"]) == 1)),
      JSONMember("alert", alert(aps["alert"])),
      JSONMember("badge", aps["badge"]?.intValue.map(JSONValue.int) ?? .null),
      JSONMember("sound", sound(aps["sound"])),
      JSONMember("deepLink", members["ab_uri"]?.stringValue.map(JSONValue.string) ?? .null),
      JSONMember("attachment", attachment(ab?["att"])),
      JSONMember("brazeId", brazeId.map(JSONValue.string) ?? .null),
      JSONMember("extras", .object(members.filter { !($0.key.isASCII && reservedKeys.contains($0.key)) })),
      JSONMember("values", .object(values)),
      JSONMember("warnings", .array(warnings)),
      JSONMember("diagnostics", diagnostics(payload)),
    ])
  }

  /// The rule table's findings (`PayloadCheck`), for the payload's text or the object's compact JSON.
  static func diagnostics(_ payload: JSONValue) -> JSONValue {
    let text = payload.stringValue
    let findings = PayloadCheck.check(text.map { Array($0.utf8) } ?? payload.jsonBytes).findings
    return .array(findings.map { $0.json(withRange: text != nil) })
  }

  /// The payload object: an object, or a string holding the JSON text of one.
  static func object(_ payload: JSONValue, issues: inout Issues) -> [JSONMember]? {
    switch payload {
    case .object(let members):
      return members
    case .string(let text):
      do {
        let parsed = try JSONReader.parse(Array(text.utf8))
        if case .object(let members) = parsed { return members }
        issues.error("payload", "wrong_type", "the payload string must hold a JSON object, not \(parsed.typeName)")
      } catch {
        issues.error(
          "payload", "invalid_json", "the payload string is not valid JSON: \(error.reason) at byte \(error.offset)")
      }
    default:
      issues.error(
        "payload", "wrong_type", "payload must be an object or a string holding a JSON object, not \(payload.typeName)")
    }
    return nil
  }

  /// `categories`: null/absent, or an array of strings.
  static func categoryList(_ categories: JSONValue?, issues: inout Issues) -> Set<String>? {
    guard let categories, !categories.isNull else { return nil }
    guard case .array(let items) = categories else {
      issues.error("categories", "wrong_type", "categories must be an array of strings, not \(categories.typeName)")
      return nil
    }
    var names = Set<String>()
    for (i, item) in items.enumerated() {
      if case .string(let s) = item {
        names.insert(s)
      } else {
        issues.error(
          joinPath("categories", index: i), "wrong_type", "a category must be a string, not \(item.typeName)")
      }
    }
    return names
  }

  /// Checks every required key; returns the typed values of those that pass, in `require` order.
  static func requiredValues(
    _ members: [JSONMember], specs: [(key: String, type: PayloadType)], issues: inout Issues,
    warnings: inout [JSONValue]
  ) -> [JSONMember] {
    var values: [JSONMember] = []
    for (key, type) in specs {
      guard let value = members[key] else {
        issues.errors.append(requireIssue(key, type, "missing", got: .null, "required key \"\(key)\" is missing"))
        continue
      }
      if value == .string("") {
        warnings.append(warning("empty_required_value", key, "required key \"\(key)\" is an empty string"))
      }
      switch PayloadRequire.coerce(value, to: type) {
      case .ok(let typed):
        values.append(JSONMember(key, typed))
      case .wrongType:
        let message = "\"\(key)\" must be \(type.rawValue), not \(value.typeName)"
        issues.errors.append(requireIssue(key, type, "wrong_type", got: .string(value.typeName), message))
      case .invalid(let why):
        let message = "\"\(key)\" is not a valid \(type.rawValue): \(why)"
        issues.errors.append(requireIssue(key, type, "invalid", got: .string(value.typeName), message))
      }
    }
    return values
  }

  private static func requireIssue(
    _ key: String, _ type: PayloadType, _ code: String, got: JSONValue, _ message: String
  ) -> Issue {
    Issue(
      path: joinPath("payload", key), code: code, message: message,
      extra: [JSONMember("key", .string(key)), JSONMember("expected", .string(type.rawValue)), JSONMember("got", got)])
  }

  /// One `liquid_unrendered` warning per top-level key whose value holds `{{` or `{%` anywhere.
  static func liquidWarnings(_ members: [JSONMember], into warnings: inout [JSONValue]) {
    for m in members where holdsLiquid(m.value) {
      warnings.append(warning("liquid_unrendered", m.key, "\"\(m.key)\" still holds unrendered Liquid ({{ or {%)"))
    }
  }

  static func holdsLiquid(_ value: JSONValue) -> Bool {
    switch value {
    case .string(let s):
      var previousBrace = false
      for b in s.utf8 {
        if previousBrace && (b == UInt8(ascii: "{") || b == UInt8(ascii: "%")) { return true }
        previousBrace = b == UInt8(ascii: "{")
      }
      return false
    case .array(let items): return items.contains(where: holdsLiquid)
    case .object(let members): return members.contains { holdsLiquid($0.value) }
    default: return false
    }
  }

  static func brazeID(_ value: JSONValue?, warnings: inout [JSONValue]) -> String? {
    switch value {
    case nil: return nil
    case .string(let s)?:
      if !s.isEmpty { return s }
      warnings.append(warning("braze_id_empty", "braze_id", "braze_id is an empty string"))
    case let other?:
      warnings.append(warning("braze_id_not_string", "braze_id", "braze_id must be a string, not \(other.typeName)"))
    }
    return nil
  }

  /// `aps.alert`: a string is the body; an object gives title, subtitle and body.
  static func alert(_ value: JSONValue?) -> JSONValue {
    let parts: (JSONValue, JSONValue, JSONValue)
    switch value {
    case .string(let body)?: parts = (.null, .null, .string(body))
    case .object(let o)?: parts = (text(o["title"]), text(o["subtitle"]), text(o["body"]))
    default: return .null
    }
    return .object([JSONMember("title", parts.0), JSONMember("subtitle", parts.1), JSONMember("body", parts.2)])
  }

  /// `aps.sound`: a file name, or a critical-alert object whose `name` is the file name.
  static func sound(_ value: JSONValue?) -> JSONValue {
    if case .object(let o)? = value { return text(o["name"]) }
    return text(value)
  }

  /// `ab.att {url, type}`: null unless `url` is a string.
  static func attachment(_ value: JSONValue?) -> JSONValue {
    guard case .object(let o)? = value, case .string(let url)? = o["url"] else { return .null }
    return .object([JSONMember("url", .string(url)), JSONMember("type", text(o["type"]))])
  }

  private static func text(_ value: JSONValue?) -> JSONValue {
    if case .string? = value { return value! }
    return .null
  }

  static func warning(_ code: String, _ key: String?, _ message: String) -> JSONValue {
    var members = [JSONMember("code", .string(code))]
    if let key { members.append(JSONMember("key", .string(key))) }
    members.append(JSONMember("message", .string(message)))
    return .object(members)
  }
}
