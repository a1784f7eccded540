package import OutboxDomain
package import OutboxJSON
package import OutboxJSONRPC
import OutboxStore
import OutboxSupport

/// `importLegacy {pending_custom_events?, pending_custom_attributes?, pending_user_attributes?, user?}`
/// → `{results, saved, failed, pending}`.
///
/// Imports what apps that followed Braze's push guide hold in their App Group's `UserDefaults`, as
/// `plutil -convert json` gives those arrays (the shapes accepted are in `GuideStorage`). Every
/// element is checked by the save method it maps to, through that method's own `prepare`; valid
/// ones are saved, invalid ones are listed with their error, never dropped. The reply waits for the
/// journal commit like a save's, so every id it names is durable.
///
/// - An absent list is empty; `{}` imports nothing and answers zero totals.
/// - A list that is not an array, an unknown key, or a `user` the save methods would refuse is a
///   `-32602` for the whole call, and nothing is saved.
/// - At most `--max-batch` elements in all per call (`too_many_elements`, with `max` and `count`).
/// - More than `longCallElements` elements make it a long call (`LongImport`): it imports a chunk
///   per loop turn, so other requests are answered meanwhile, and answers when all are imported.
/// Transcript: `Protocol/transcripts/import.txt`.
package enum ImportLegacy: RPCMethod {
  package static let name = "importLegacy"

  package static func handle(_ params: inout Params, _ service: Service) throws -> ImportReply {
    let (elements, user) = read(&params)
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
    if elements.count > longCallElements { return .long(LongStart(LongImport(params, service))) }
    let userText = user.map { Array(params.tape.text($0.node)) }
    return .now(run(params.tape, elements, user: userText, service))
  }

  /// The elements of the three lists, in import order, and the `user` param's node.
  static func read(_ params: inout Params) -> ([GuideStorage.Element], (user: UserIdentifier, node: Int)?) {
    var elements: [GuideStorage.Element] = []
    for list in GuideStorage.List.allCases {
      guard let array = params.node(list.key, "array") else { continue }
      for (index, (_, node)) in params.tape.elements(array).enumerated() {
        elements.append(GuideStorage.Element(list: list, index: index, node: node))
      }
    }
    return (elements, params.userNode())
  }
}

extension ImportLegacy {
  /// Checks and saves each element, in order. Every element gets one outcome.
  package static func run(
    _ tape: JSONTape, _ elements: [GuideStorage.Element], user: [UInt8]?, _ service: Service
  ) -> ImportResult {
    var result = ImportResult()
    result.outcomes.reserveCapacity(elements.count)
    for element in elements {
      var outcome = ImportOutcome(list: element.list, index: element.index)
      switch GuideStorage.requests(tape, element) {
      case .failure(let refusal): outcome.error = .invalidParams([refusal.issue])
      case .success(let items): save(items, element.list, user: user, service, &outcome, &result.awaitsCommit)
      }
      result.outcomes.append(outcome)
    }
    result.pending = service.store.count
    return result
  }

  /// Checks every item of one element with its save method and that the store has room for all of
  /// them, then stores them all; or none, when one fails (a dictionary is saved whole or not at all).
  private static func save(
    _ items: [(key: String?, params: [UInt8])], _ list: GuideStorage.List, user: [UInt8]?, _ service: Service,
    _ outcome: inout ImportOutcome, _ awaitsCommit: inout Bool
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
    let sizes = prepared.map { (body: $0.body.count, clientID: $0.clientID?.utf8.count ?? 0) }
    if let (n, error) = service.store.firstRefused(sizes) {
      outcome.error = error.rpcError
      if list == .customAttributes && items.count > 1 { outcome.key = items[n].key }
      return
    }
    var saved: [SaveResult] = []
    for (n, item) in prepared.enumerated() {
      do throws(StoreError) {
        saved.append(try service.save(item))
      } catch {
        // Not expected after the check above; if it happens, nothing of this element stays.
        service.store.withdraw(saved.filter { !$0.receipt.duplicate }.map(\.receipt.seq))
        outcome.error = error.rpcError
        if list == .customAttributes && items.count > 1 { outcome.key = items[n].key }
        return
      }
    }
    for result in saved {
      // Counted when the store takes it (an import's journal failure is reported by the import).
      if !result.receipt.duplicate { service.counters.countSave(result.kind) }
      outcome.ids.append(result.receipt.id.text)
      outcome.warnings += result.warnings
      awaitsCommit = awaitsCommit || result.awaitsCommit
    }
  }

  /// Runs the list's save method's checks on one params object.
  private static func prepare(
    _ text: [UInt8], _ list: GuideStorage.List, _ service: Service
  ) -> Swift.Result<PreparedSave, RPCError> {
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
}

extension GuideStorage.List {
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
package struct ImportOutcome: Sendable {
  package var list: GuideStorage.List
  package var index: Int
  package var ids: [String] = []
  /// The custom attribute key whose save failed, for a dictionary of several keys.
  package var key: String? = nil
  package var error: RPCError? = nil
  package var warnings: [Issue] = []

  package var saved: Bool { error == nil }
}

/// `importLegacy`'s result. The reply waits for the commit when any element was saved.
package struct ImportResult: JSONEncodable {
  package var outcomes: [ImportOutcome] = []
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

extension ImportOutcome: JSONEncodable {
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
