import OutboxDomain
import OutboxJSON

/// `parsePayload {payload, require?, categories?}` → the push's Braze and Apple fields, its extras,
/// typed `values` for the required keys, and warnings.
///
/// Replaces the seed's `guard … else { fatalError(…) }`: a missing or mistyped required key is a
/// `-32602` listing every failure. Transcript: `Protocol/transcripts/payload.txt`.
enum ParsePayload: RPCMethod {
  package static let name = "parsePayload"

  package static func handle(_ params: inout Params, _ service: Service) throws -> JSONValue {
    let payload = params.value("payload")
    if payload == nil { params.issues.error("payload", "missing", "payload is required") }
    let require = params.value("require")
    let categories = params.value("categories")
    var result = JSONValue.null
    if let payload {
      result = PushPayload.parse(payload: payload, require: require, categories: categories, issues: &params.issues)
    }
    _ = try params.finish()
    return result
  }
}
