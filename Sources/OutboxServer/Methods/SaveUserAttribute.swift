import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxStore
import OutboxSupport

/// `saveUserAttribute {field, value, user?, id?}` → `{id, seq, pending}`.
///
/// `field` is one of Braze's default user fields (`UserField`); `value` is a string or null (unset).
/// A later save of the same field for the same user supersedes an earlier one at flush time.
/// Transcript: `Protocol/transcripts/basic.txt`.
enum SaveUserAttribute: RPCMethod {
  package static let name = "saveUserAttribute"

  package static func handle(_ params: inout Params, _ service: Service) throws -> SaveResult {
    try service.save(prepare(&params, service))
  }

  /// Checks the params and builds the item, storing nothing (shared with `importLegacy`).
  package static func prepare(_ params: inout Params, _ service: Service) throws(RPCError) -> PreparedSave {
    let fieldName = params.string("field", required: true)
    let raw = params.value("value")
    if raw == nil { params.issues.error("value", "missing", "value is required (null unsets the field)") }
    let user = params.user()
    let clientID = params.clientID()
    var checked: (field: UserField, value: JSONValue)? = nil
    if let fieldName, let raw {
      checked = UserFieldRules.check(
        field: fieldName, value: raw, limits: service.config.domain, issues: &params.issues)
    }
    if let checked, let user, user.conflicts(with: checked.field) {
      params.issues.error(
        "field", "conflicting_identifier",
        "\(checked.field.rawValue) is this user's identifier; /users/track cannot carry both in one object")
    }
    let warnings = try params.finish()
    guard let checked else { throw .internalError("user field check returned nothing without an error") }
    var body: [UInt8] = []
    body.appendUser(user)
    body.appendMember("field")
    body.appendJSONString(checked.field.rawValue)
    body.appendMember("value")
    checked.value.encodeJSON(into: &body)
    return PreparedSave(
      kind: .userAttribute, clientID: clientID, user: user, attribute: checked.field.rawValue, body: body,
      warnings: warnings)
  }
}
