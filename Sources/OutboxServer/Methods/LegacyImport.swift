package import OutboxDelivery
package import OutboxDomain
package import OutboxJSON
package import OutboxJSONRPC
package import OutboxStore
package import OutboxSupport
package import OutboxTransport

/// The shapes of Braze's push guide ("Logging manually"), mapped onto the save methods' params.
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
package enum LegacyImport {
  /// Checks and saves each element, in order. Every element gets one outcome.
  package static func run(
    _ tape: JSONTape, _ elements: [LegacyElement], user: [UInt8]?, _ service: Service
  ) -> ImportResult {
    var result = ImportResult()
    result.outcomes.reserveCapacity(elements.count)
    for element in elements {
      var outcome = LegacyOutcome(list: element.list, index: element.index)
      switch requests(tape, element) {
      case .failure(let error): outcome.error = error
      case .success(let items): save(items, element.list, user: user, service, &outcome, &result.awaitsCommit)
      }
      result.outcomes.append(outcome)
    }
    result.pending = service.store.count
    return result
  }

  /// Checks every item of one element with its save method, then stores them all, or none when one fails.
  private static func save(
    _ items: [(key: String?, params: [UInt8])], _ list: LegacyList, user: [UInt8]?, _ service: Service,
    _ outcome: inout LegacyOutcome, _ awaitsCommit: inout Bool
  ) {
    var prepared: [PreparedSave] = []
    for item in items {
      var params = item.params
      if let user {
        params.removeLast()
        params.appendRaw(",\"user\":")
        params.append(contentsOf: user)
        params.append(UInt8(ascii: "}"))
      }
      switch prepare(params, list, service) {
      case .success(let save): prepared.append(save)
      case .failure(let error):
        outcome.error = error
        if list == .customAttributes && items.count > 1 { outcome.key = item.key }
        return
      }
    }
    for (n, item) in prepared.enumerated() {
      do throws(StoreError) {
        let saved = try service.save(item)
        // Counted when the store takes it (an import's journal failure is reported by the import).
        if !saved.receipt.duplicate { service.counters.countSave(saved.kind) }
        outcome.ids.append(saved.receipt.id.text)
        outcome.warnings += saved.warnings
        awaitsCommit = awaitsCommit || saved.awaitsCommit
      } catch {
        outcome.error = error.rpcError
        if list == .customAttributes && items.count > 1 { outcome.key = items[n].key }
        return
      }
    }
  }

  /// Runs the list's save method's checks on one params object.
  private static func prepare(_ text: [UInt8], _ list: LegacyList, _ service: Service) -> Result<PreparedSave, RPCError>
  {
    text.withUnsafeBufferPointer { bytes in
      do {
        let tape = try JSONTape(bytes, maxDepth: service.config.maxDepth + 2)
        var params = Params(tape: tape, node: tape.root)
        switch list {
        case .customEvents: return .success(try SaveCustomEvent.prepare(&params, service))
        case .customAttributes: return .success(try SaveCustomAttribute.prepare(&params, service))
        case .userAttributes: return .success(try SaveUserAttribute.prepare(&params, service))
        }
      } catch let error as RPCError {
        return .failure(error)
      } catch {
        return .failure(.internalError("rebuilt params did not read back: \(error)"))
      }
    }
  }

  /// The save-method params for one element (one per custom attribute key), or why it has none.
  static func requests(
    _ tape: JSONTape, _ element: LegacyElement
  ) -> Result<[(key: String?, params: [UInt8])], RPCError> {
    let node = element.node
    switch element.list {
    case .customEvents: return event(tape, node).map { [(nil, $0)] }
    case .customAttributes: return attributes(tape, node)
    case .userAttributes: return userAttribute(tape, node).map { [(nil, $0)] }
    }
  }

  private static func refuse(_ path: String, _ code: String, _ message: String) -> RPCError {
    .invalidParams(path: path, code: code, message)
  }

  private static func isEventNameKey(_ tape: JSONTape, _ k: Int) -> Bool {
    tape.stringEquals(k, "event_name") || tape.stringEquals(k, "Event Name")
  }

  /// `{"event_name"|"Event Name": name, other: …}` → `{"name":…,"properties":{other: …}}`.
  private static func event(_ tape: JSONTape, _ node: Int) -> Result<[UInt8], RPCError> {
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
    out.appendRaw("{\"name\":")
    out.append(contentsOf: tape.text(name.value))
    out.appendRaw(",\"properties\":{")
    var first = true
    for (k, v) in tape.members(node) where k != name.key {
      if !first { out.append(UInt8(ascii: ",")) }
      first = false
      appendMember(tape, k, v, to: &out)
    }
    out.appendRaw("}}")
    return .success(out)
  }

  /// `{key: value, …}` → one `{"key":…,"value":…}` per key.
  private static func attributes(_ tape: JSONTape, _ node: Int) -> Result<[(key: String?, params: [UInt8])], RPCError> {
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
  private static func userAttribute(_ tape: JSONTape, _ node: Int) -> Result<[UInt8], RPCError> {
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
    out.appendRaw(name)
    out.appendRaw("\":")
    out.append(contentsOf: tape.text(k))
    out.appendRaw(",\"value\":")
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
