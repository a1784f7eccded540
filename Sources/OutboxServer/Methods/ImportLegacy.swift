package import OutboxDelivery
package import OutboxDomain
package import OutboxJSON
package import OutboxJSONRPC
package import OutboxStore
package import OutboxSupport
package import OutboxTransport

/// `importLegacy {pending_custom_events?, pending_custom_attributes?, pending_user_attributes?, user?}`
/// → `{results, saved, failed, pending}`.
///
/// Imports what apps that followed Braze's push guide hold in their App Group's `UserDefaults`, as
/// `plutil -convert json` gives those arrays (the shapes accepted are in `LegacyImport`). Every
/// element is checked by the save method it maps to, through that method's own `prepare`; valid
/// ones are saved, invalid ones are listed with their error, never dropped. The reply waits for the
/// journal commit like a save's, so every id it names is durable.
///
/// - An absent list is empty; `{}` imports nothing and answers zero totals.
/// - A list that is not an array, an unknown key, or a `user` the save methods would refuse is a
///   `-32602` for the whole call, and nothing is saved.
/// - At most `--max-batch` elements in all per call (`too_many_elements`, with `max` and `count`).
/// Transcript: `Protocol/transcripts/import.txt`.
package enum ImportLegacy: RPCMethod {
  package static let name = "importLegacy"

  package static func handle(_ params: inout Params, _ service: Service) throws -> ImportResult {
    var elements: [LegacyElement] = []
    for list in LegacyList.allCases {
      guard let array = params.node(list.key, "array") else { continue }
      for (index, (_, node)) in params.tape.elements(array).enumerated() {
        elements.append(LegacyElement(list: list, index: index, node: node))
      }
    }
    let user = params.userNode()
    let limit = service.config.maxBatch
    if elements.count > limit {
      params.issues.errors.append(
        Issue(
          path: "", code: "too_many_elements",
          message: "\(name) takes at most \(limit) elements in all (--max-batch); this call has \(elements.count)",
          extra: [
            JSONMember("min", .int(0)), JSONMember("max", .int(Int64(limit))),
            JSONMember("count", .int(Int64(elements.count))),
          ]))
    }
    _ = try params.finish()
    let userText = user.map { Array(params.tape.text($0.node)) }
    return LegacyImport.run(params.tape, elements, user: userText, service)
  }
}

/// One element of a legacy list: which list, its index there, and its node in the tape.
package struct LegacyElement: Sendable {
  package var list: LegacyList
  package var index: Int
  package var node: Int

  package init(list: LegacyList, index: Int, node: Int) {
    self.list = list
    self.index = index
    self.node = node
  }
}

/// The three `UserDefaults` keys of the guide's `RemoteStorageKey`, in import order.
package enum LegacyList: CaseIterable, Sendable {
  case customEvents, customAttributes, userAttributes

  /// The key, as the guide's `RemoteStorageKey` raw value.
  package var key: StaticString {
    switch self {
    case .customEvents: "pending_custom_events"
    case .customAttributes: "pending_custom_attributes"
    case .userAttributes: "pending_user_attributes"
    }
  }

  /// The save method that checks and stores its elements.
  package var method: String {
    switch self {
    case .customEvents: SaveCustomEvent.name
    case .customAttributes: SaveCustomAttribute.name
    case .userAttributes: SaveUserAttribute.name
    }
  }
}

/// What became of one element: the ids of the items saved for it, or the error that refused it.
package struct LegacyOutcome: Sendable {
  package var list: LegacyList
  package var index: Int
  package var ids: [String] = []
  /// The custom attribute key whose save failed, for a dictionary of several keys.
  package var key: String? = nil
  package var error: RPCError? = nil
  package var warnings: [Issue] = []

  package var saved: Bool { error == nil }
}

/// `importLegacy`'s result. The reply waits for the commit when any element was saved.
package struct ImportResult: AwaitsCommit {
  package var outcomes: [LegacyOutcome] = []
  package var pending = 0
  package var awaitsCommit = false

  package var saved: Int { outcomes.count { $0.saved } }
  package var failed: Int { outcomes.count - saved }

  package func encodeJSON(into out: inout [UInt8]) {
    out.appendASCII("{\"results\":[")
    for (n, outcome) in outcomes.enumerated() {
      if n > 0 { out.append(UInt8(ascii: ",")) }
      outcome.encodeJSON(into: &out)
    }
    out.appendASCII("],\"saved\":")
    out.appendInt(Int64(saved))
    out.appendASCII(",\"failed\":")
    out.appendInt(Int64(failed))
    out.appendASCII(",\"pending\":")
    out.appendInt(Int64(pending))
    out.append(UInt8(ascii: "}"))
  }
}

extension LegacyOutcome: JSONEncodable {
  package func encodeJSON(into out: inout [UInt8]) {
    var members = [
      JSONMember("list", .string("\(list.key)")), JSONMember("index", .int(Int64(index))),
      JSONMember("method", .string(list.method)),
    ]
    if error == nil || !ids.isEmpty { members.append(JSONMember("ids", .array(ids.map(JSONValue.string)))) }
    if let key { members.append(JSONMember("key", .string(key))) }
    if let error { members.append(JSONMember("error", error.json)) }
    if !warnings.isEmpty { members.append(JSONMember("warnings", .array(warnings.map(\.json)))) }
    members.encodeJSONObject(into: &out)
  }
}

extension RPCError {
  /// The error object as a value, as a reply's `error` member writes it.
  package var json: JSONValue {
    var members = [JSONMember("code", .int(Int64(code.rawValue))), JSONMember("message", .string(message))]
    if let data { members.append(JSONMember("data", data)) }
    return .object(members)
  }
}
