import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxStore
import OutboxSupport

/// `saveCustomAttribute {key, value, op?, user?, id?}` → `{id, seq, pending}`.
///
/// `op` is `set` (default), `inc`, `add`, `remove` or `unset`; `CustomAttributeRules` checks the value
/// for the operation and normalizes arrays. Transcript: `Protocol/transcripts/basic.txt`.
enum SaveCustomAttribute: RPCMethod {
  package static let name = "saveCustomAttribute"

  package static func handle(_ params: inout Params, _ service: Service) throws -> SaveResult {
    try service.save(prepare(&params, service))
  }

  /// Checks the params and builds the item, storing nothing (shared with `importLegacy`).
  package static func prepare(_ params: inout Params, _ service: Service) throws(RPCError) -> PreparedSave {
    let key = params.string("key", required: true)
    let opName = params.choice("op", ["set", "inc", "add", "remove", "unset"]) ?? AttributeOp.set.rawValue
    let op = AttributeOp(rawValue: opName) ?? .set
    let raw = params.value("value")
    if raw == nil && op != .unset { params.issues.error("value", "missing", "value is required for op \(opName)") }
    let user = params.user()
    let clientID = params.clientID()
    var value = raw ?? .null
    if let key, raw != nil || op == .unset {
      value = CustomAttributeRules.check(
        key: key, op: op, value: value, limits: service.config.domain, issues: &params.issues)
    }
    let warnings = try params.finish()
    var body: [UInt8] = []
    body.appendUser(user)
    body.appendMember("key")
    body.appendJSONString(key!)
    body.appendMember("op")
    body.appendJSONString(opName)
    body.appendMember("value")
    value.encodeJSON(into: &body)
    return PreparedSave(
      kind: .customAttribute, clientID: clientID, user: user, attribute: nil, body: body, warnings: warnings)
  }
}
