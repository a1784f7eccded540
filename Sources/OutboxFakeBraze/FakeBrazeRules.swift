package import OutboxJSON
import OutboxSupport

/// The fake's own reading of Braze's `/users/track` rules (domain.md §3, from Braze's docs). It
/// shares no code with `OutboxDomain`, on purpose: it is the independent side that the outbox's
/// bodies are checked against, and `FakeBrazeRulesTests` compares the two tables limit by limit.
package enum FakeBrazeRules {
  /// The documented limits, by name: the comparison test reads them from here.
  package static let limits: [(name: String, value: Int)] = [
    ("objects per array", 75),
    ("characters in a name, key or string value", 255),
    ("bytes of event properties", 51_200),
    ("purchase quantity", 100),
  ]

  package static func limit(_ name: String) -> Int { limits.first { $0.name == name }!.value }

  static let arrays = ["attributes", "events", "purchases"]
  static let identifiers = ["external_id", "user_alias", "braze_id", "email", "phone"]
  static let missingIdentifier = "'external_id', 'user_alias', 'braze_id', 'email' or 'phone' is required"

  /// What a body asks of Braze: a fatal answer (400) or each bad object's message by array and index.
  package enum Outcome: Equatable, Sendable {
    case fatal(String)
    case checked(errors: [ObjectError], processed: [String: Int])
  }

  package struct ObjectError: Equatable, Sendable {
    package var array: String
    package var index: Int
    package var message: String
  }

  /// Checks a body as Braze documents it. `combined`: the 75 objects count across the three arrays.
  package static func check(_ body: JSONValue, maxObjects: Int, combined: Bool) -> Outcome {
    guard case .object(let members) = body else { return .fatal("request body must be a JSON object") }
    var total = 0
    var errors: [ObjectError] = []
    var processed: [String: Int] = [:]
    for member in members where !arrays.contains(member.key) && member.key != "partner" {
      return .fatal("unknown key '\(member.key)'; a /users/track body has attributes, events and purchases")
    }
    for array in arrays {
      guard let value = body[array] else { continue }
      guard case .array(let objects) = value else { return .fatal("'\(array)' must be an array") }
      guard objects.count <= maxObjects else {
        return .fatal("Max Input Length Exceeded: \(objects.count) \(array); at most \(maxObjects)")
      }
      total += objects.count
      var good = 0
      for (index, object) in objects.enumerated() {
        if let message = checkObject(object, in: array) {
          errors.append(ObjectError(array: array, index: index, message: message))
        } else {
          good += 1
        }
      }
      processed[array] = good
    }
    if combined && total > maxObjects {
      return .fatal("Max Input Length Exceeded: \(total) objects in all; at most \(maxObjects) combined")
    }
    guard total > 0 || arrays.contains(where: { body[$0] != nil }) else {
      return .fatal("the body has none of attributes, events and purchases")
    }
    return .checked(errors: errors, processed: processed)
  }

  /// The first problem with one object, or nil.
  static func checkObject(_ value: JSONValue, in array: String) -> String? {
    guard case .object(let members) = value else { return "each \(array) entry must be an object" }
    if let problem = identifier(value, attributes: array == "attributes") { return problem }
    for flag in ["_update_existing_only", "_merge_objects", "push_token_import"] where value[flag] != nil {
      guard value[flag]?.boolValue != nil else { return "'\(flag)' must be a boolean" }
    }
    if let appId = value["app_id"], appId.stringValue == nil { return "'app_id' must be a string" }
    switch array {
    case "events":
      if let problem = text(value["name"], "name", required: true) { return problem }
      if let problem = time(value["time"]) { return problem }
      return properties(value["properties"])
    case "purchases":
      if let problem = text(value["product_id"], "product_id", required: true) { return problem }
      guard let currency = value["currency"]?.stringValue, currency.utf8.count == 3,
        currency.utf8.allSatisfy({ $0 >= 65 && $0 <= 90 })
      else { return "'currency' must be an ISO 4217 code of three capital letters" }
      switch value["price"] {
      case .int?, .number?: break
      default: return "'price' must be a number"
      }
      if let quantity = value["quantity"] {
        let most = limit("purchase quantity")
        guard let n = quantity.intValue, n >= 1, n <= most else {
          return "'quantity' must be an integer from 1 to \(most)"
        }
      }
      if let problem = time(value["time"]) { return problem }
      return properties(value["properties"])
    default:
      for member in members where !identifiers.contains(member.key) {
        if let problem = key(member.key, "attribute name") { return problem }
        if case .string(let s) = member.value, let problem = stringValue(s, "'\(member.key)'") { return problem }
      }
      return nil
    }
  }

  /// Braze's identifier rule: one of the five, each of its type.
  static func identifier(_ object: JSONValue, attributes: Bool) -> String? {
    var found = false
    for name in identifiers {
      guard let value = object[name] else { continue }
      if name == "user_alias" {
        guard value["alias_name"]?.stringValue?.isEmpty == false, value["alias_label"]?.stringValue?.isEmpty == false
        else { return "'user_alias' must be an object with string 'alias_name' and 'alias_label'" }
      } else {
        guard let text = value.stringValue, !text.isEmpty else { return "'\(name)' must be a non-empty string" }
      }
      found = true
    }
    if attributes && object["push_token_import"]?.boolValue == true {
      if object["external_id"] != nil || object["braze_id"] != nil {
        return "'push_token_import' objects must not have 'external_id' or 'braze_id'"
      }
      return nil
    }
    return found ? nil : missingIdentifier
  }

  static func text(_ value: JSONValue?, _ name: String, required: Bool) -> String? {
    guard let value else { return required ? "'\(name)' is required" : nil }
    guard let s = value.stringValue, !s.isEmpty else { return "'\(name)' must be a non-empty string" }
    return stringValue(s, "'\(name)'")
  }

  static func time(_ value: JSONValue?) -> String? {
    guard let value else { return "'time' is required" }
    guard let s = value.stringValue, ISO8601.parseDateTime(s) != nil else {
      return "'time' must be an ISO 8601 date-time string"
    }
    return nil
  }

  static func properties(_ value: JSONValue?) -> String? {
    guard let value else { return nil }
    guard case .object(let members) = value else { return "'properties' must be an object" }
    let most = limit("bytes of event properties")
    let size = value.jsonBytes.count
    guard size <= most else { return "'properties' is \(size) bytes of JSON; at most \(most)" }
    for member in members {
      if let problem = key(member.key, "property name") { return problem }
      if case .string(let s) = member.value, let problem = stringValue(s, "property '\(member.key)'") {
        return problem
      }
    }
    return nil
  }

  static func key(_ name: String, _ what: String) -> String? {
    guard !name.isEmpty else { return "an empty \(what)" }
    guard !name.hasPrefix("$") else { return "\(what) '\(name)' starts with '$'" }
    return stringValue(name, "\(what) '\(name.prefix(40))'")
  }

  static func stringValue(_ s: String, _ what: String) -> String? {
    let most = limit("characters in a name, key or string value")
    let count = s.unicodeScalars.count
    return count <= most ? nil : "\(what) has \(count) characters; at most \(most)"
  }
}
