package import OutboxJSON
import OutboxSupport

/// What apps that followed Braze's push guide ("Logging manually") keep in their App Group's
/// `UserDefaults`: three lists under the guide's `RemoteStorageKey` keys, as `plutil -convert json`
/// gives them, and how each element maps onto a save method's params (`importLegacy` and
/// `push-outbox import` check and save them through those methods).
///
/// - `pending_custom_events`: the "EventName Dictionary" helper writes the name and the properties
///   side by side in one flat dictionary (`event_name` in the Objective-C helper, the demo's
///   `"Event Name"` in Swift). So exactly one of those two keys is the name and every other key is
///   a property, as the guide's own `logPendingCustomEventsIfNecessary` reads it back: a key named
///   `properties` is one property, not a nested set. → `saveCustomEvent {name, properties}`.
/// - `pending_custom_attributes`: `{key: value}` dictionaries. The guide saves one key per
///   dictionary but logs every key of each, so each key becomes one `saveCustomAttribute {key,
///   value}` (`op` set; a string array too, as `setCustomAttributeArrayWithKey` sets it). A
///   dictionary is saved whole or not at all. One holding `event_name` or `"Event Name"` is refused
///   (`event_in_attributes`): the guide's Objective-C `saveCustomEvent` stores events under this key.
/// - `pending_user_attributes`: the Swift `UserAttribute` Codable shape, one key naming the field:
///   `{"email": …}` → `saveUserAttribute {field: "email", value}`; any key the save method knows
///   works the same way. The Objective-C shape (`userField` + `attributeType`) is refused: the
///   guide never fixes `UserAttributeType`'s numbers, so the field it means is a guess.
package enum GuideStorage {
  /// The three `UserDefaults` keys of the guide's `RemoteStorageKey`, in import order.
  package enum List: CaseIterable, Sendable {
    case customEvents, customAttributes, userAttributes

    /// The key, as the guide's `RemoteStorageKey` raw value.
    package var key: StaticString {
      switch self {
      case .customEvents: "pending_custom_events"
      case .customAttributes: "pending_custom_attributes"
      case .userAttributes: "pending_user_attributes"
      }
    }
  }

  /// One element of a list: which list, its index there, and its node in the tape.
  package struct Element: Sendable {
    package var list: List
    package var index: Int
    package var node: Int

    package init(list: List, index: Int, node: Int) {
      self.list = list
      self.index = index
      self.node = node
    }
  }

  /// Why an element maps to no params: one problem, with a path relative to the element.
  package struct Refusal: Error, Sendable {
    package var issue: Issue
  }

  /// The save-method params for one element (one per custom attribute key), or why it has none.
  package static func requests(
    _ tape: JSONTape, _ element: Element
  ) -> Result<[(key: String?, params: [UInt8])], Refusal> {
    let node = element.node
    switch element.list {
    case .customEvents: return event(tape, node).map { [(nil, $0)] }
    case .customAttributes: return attributes(tape, node)
    case .userAttributes: return userAttribute(tape, node).map { [(nil, $0)] }
    }
  }

  private static func refuse(_ path: String, _ code: String, _ message: String) -> Refusal {
    Refusal(issue: Issue(path: path, code: code, message: message))
  }

  private static func isEventNameKey(_ tape: JSONTape, _ k: Int) -> Bool {
    tape.stringEquals(k, "event_name") || tape.stringEquals(k, "Event Name")
  }

  /// `{"event_name"|"Event Name": name, other: …}` → `{"name":…,"properties":{other: …}}`.
  private static func event(_ tape: JSONTape, _ node: Int) -> Result<[UInt8], Refusal> {
    guard tape.isObject(node) else {
      return .failure(refuse("", "wrong_type", "a pending custom event must be an object, not \(tape.typeName(node))"))
    }
    let names = tape.members(node).filter { isEventNameKey(tape, $0.key) }
    guard names.count == 1, let name = names.first else {
      return .failure(
        names.isEmpty
          ? refuse(
            "event_name", "missing", "a pending custom event needs \"event_name\" (or the demo's \"Event Name\")")
          : refuse(
            "event_name", "ambiguous_event_name", "a pending custom event holds both \"event_name\" and \"Event Name\"")
      )
    }
    var out: [UInt8] = []
    out.appendASCII("{\"name\":")
    out.append(contentsOf: tape.text(name.value))
    out.appendASCII(",\"properties\":{")
    var first = true
    for (k, v) in tape.members(node) where k != name.key {
      if !first { out.append(UInt8(ascii: ",")) }
      first = false
      appendMember(tape, k, v, to: &out)
    }
    out.appendASCII("}}")
    return .success(out)
  }

  /// `{key: value, …}` → one `{"key":…,"value":…}` per key.
  private static func attributes(_ tape: JSONTape, _ node: Int) -> Result<[(key: String?, params: [UInt8])], Refusal> {
    guard tape.isObject(node) else {
      return .failure(
        refuse("", "wrong_type", "a pending custom attribute must be a {key: value} object, not \(tape.typeName(node))")
      )
    }
    guard tape.childCount(node) > 0 else {
      return .failure(refuse("", "empty", "a pending custom attribute must hold at least one key"))
    }
    if tape.members(node).contains(where: { isEventNameKey(tape, $0.key) }) {
      return .failure(
        refuse(
          "event_name", "event_in_attributes",
          "this looks like a custom event stored under pending_custom_attributes (as the guide's Objective-C saveCustomEvent does); move it to pending_custom_events"
        ))
    }
    return .success(
      tape.members(node).map { k, v in (tape.string(k), pair("key", k, v, tape)) })
  }

  /// `{"email": value}` (the Swift `UserAttribute` Codable shape) → `{"field":"email","value":…}`.
  private static func userAttribute(_ tape: JSONTape, _ node: Int) -> Result<[UInt8], Refusal> {
    guard tape.isObject(node) else {
      let hint =
        tape.isString(node)
        ? "; the guide stores each as PropertyListEncoder data: decode each one to its {\"email\": …} dictionary first"
        : ""
      return .failure(
        refuse(
          "", "wrong_type",
          "a pending user attribute must be an object such as {\"email\": …}, not \(tape.typeName(node))" + hint))
    }
    if tape.member(node, "$archiver") != nil {
      return .failure(
        refuse(
          "", "keyed_archive",
          "an NSKeyedArchiver archive (the guide's Objective-C UserAttribute) is not imported; write it as {\"email\": …}"
        ))
    }
    if tape.member(node, "userField") != nil || tape.member(node, "attributeType") != nil {
      return .failure(
        refuse(
          "attributeType", "ambiguous_attribute_type",
          "the Objective-C {userField, attributeType} shape is not imported: the guide does not fix attributeType's numbers; write it as {\"email\": …}"
        ))
    }
    guard tape.childCount(node) == 1, let (k, v) = tape.members(node).first(where: { _ in true }) else {
      return .failure(
        refuse(
          "", "one_field_expected",
          "a pending user attribute must hold exactly one field, like {\"email\": …}; this one has \(tape.childCount(node))"
        ))
    }
    return .success(pair("field", k, v, tape))
  }

  /// `{"<name>":<k's text>,"value":<v's text>}`: the params a key/value element becomes.
  private static func pair(_ name: StaticString, _ k: Int, _ v: Int, _ tape: JSONTape) -> [UInt8] {
    var out: [UInt8] = [UInt8(ascii: "{"), UInt8(ascii: "\"")]
    out.appendASCII(name)
    out.appendASCII("\":")
    out.append(contentsOf: tape.text(k))
    out.appendASCII(",\"value\":")
    out.append(contentsOf: tape.text(v))
    out.append(UInt8(ascii: "}"))
    return out
  }

  private static func appendMember(_ tape: JSONTape, _ k: Int, _ v: Int, to out: inout [UInt8]) {
    out.append(contentsOf: tape.text(k))
    out.append(UInt8(ascii: ":"))
    out.append(contentsOf: tape.text(v))
  }
}
