package import OutboxJSON
import OutboxSupport

/// A JSON-RPC error code: the five standard codes plus push-outbox's own in -32000…-32099.
package struct ErrorCode: RawRepresentable, Sendable, Hashable {
  package var rawValue: Int
  package init(rawValue: Int) { self.rawValue = rawValue }

  package static let parseError = ErrorCode(rawValue: -32700)
  package static let invalidRequest = ErrorCode(rawValue: -32600)
  package static let methodNotFound = ErrorCode(rawValue: -32601)
  package static let invalidParams = ErrorCode(rawValue: -32602)
  package static let internalError = ErrorCode(rawValue: -32603)
  package static let storeFull = ErrorCode(rawValue: -32001)
  package static let itemTooLarge = ErrorCode(rawValue: -32002)
  package static let storageUnavailable = ErrorCode(rawValue: -32003)
  package static let leaseNotFound = ErrorCode(rawValue: -32004)
  package static let storeLocked = ErrorCode(rawValue: -32005)
  package static let unsupportedStoreVersion = ErrorCode(rawValue: -32006)
  package static let startupFailed = ErrorCode(rawValue: -32007)
  package static let deliveryNotConfigured = ErrorCode(rawValue: -32010)
  /// LSP's `RequestCancelled`: a long call answered early because the client cancelled it.
  package static let requestCancelled = ErrorCode(rawValue: -32800)
}

/// The `error` member of a response. `data` is always an object when present.
package struct RPCError: Error, Sendable, Hashable {
  package var code: ErrorCode
  package var message: String
  package var data: JSONValue?

  package init(_ code: ErrorCode, _ message: String, data: JSONValue? = nil) {
    self.code = code
    self.message = message
    self.data = data
  }

  package static func parseError(_ reason: String, offset: Int? = nil) -> RPCError {
    var data = [JSONMember("reason", .string(reason))]
    if let offset { data.append(JSONMember("offset", .int(Int64(offset)))) }
    return RPCError(.parseError, "Parse error", data: .object(data))
  }

  package static func invalidRequest(_ reason: String) -> RPCError {
    RPCError(.invalidRequest, "Invalid Request", data: .object([JSONMember("reason", .string(reason))]))
  }

  /// `didYouMean`: the served name nearest to `method`, when it is near enough to be a slip.
  package static func methodNotFound(_ method: String, didYouMean: String? = nil) -> RPCError {
    var data = [JSONMember("method", .string(method))]
    if let didYouMean { data.append(JSONMember("didYouMean", .string(didYouMean))) }
    return RPCError(.methodNotFound, "Method not found", data: .object(data))
  }

  package static func internalError(_ reason: String) -> RPCError {
    RPCError(.internalError, "Internal error", data: .object([JSONMember("reason", .string(reason))]))
  }

  /// The answer to a long call the client cancelled; `detail` is the reason it gave, if any.
  package static func requestCancelled(_ detail: String?) -> RPCError {
    var data = [JSONMember("reason", .string("request_cancelled"))]
    if let detail { data.append(JSONMember("detail", .string(detail))) }
    return RPCError(.requestCancelled, "Request cancelled", data: .object(data))
  }

  /// An application error with a stable `data.reason` and optional extra members.
  package static func app(
    _ code: ErrorCode, _ reason: String, _ message: String, _ extra: [JSONMember] = []
  ) -> RPCError {
    RPCError(code, message, data: .object([JSONMember("reason", .string(reason))] + extra))
  }
}

extension RPCError: JSONEncodable {
  package func encodeJSON(into out: inout [UInt8]) {
    out.appendASCII("{\"code\":")
    out.appendInt(Int64(code.rawValue))
    out.appendASCII(",\"message\":")
    out.appendJSONString(message)
    if let data {
      out.appendASCII(",\"data\":")
      data.encodeJSON(into: &out)
    }
    out.append(UInt8(ascii: "}"))
  }
}
