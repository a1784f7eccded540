package import OutboxDomain
import OutboxJSON
package import OutboxJSONRPC

/// The one place where the domain's problem reports become the wire's `-32602`.
extension RPCError {
  /// `-32602` listing every problem found.
  package static func invalidParams(_ issues: [Issue]) -> RPCError {
    RPCError(.invalidParams, "Invalid params", data: .object([JSONMember("errors", .array(issues.map(\.json)))]))
  }

  package static func invalidParams(path: String, code: String, _ message: String) -> RPCError {
    invalidParams([Issue(path: path, code: code, message: message)])
  }
}
