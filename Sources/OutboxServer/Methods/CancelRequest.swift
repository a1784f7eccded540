import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxSupport

/// `$/cancelRequest {id}` (LSP), a notification: a long call in progress with that request id is
/// answered at once with `-32800` and starts nothing new (`LongCalls.cancel`). An unknown or
/// finished id does nothing. Sent with an id, it is answered `null`.
package enum CancelRequest: RPCMethod {
  package static let name = "$/cancelRequest"

  package static func handle(_ params: inout Params, _ service: Service) throws -> NullResult {
    let id = params.requestID("id")
    _ = try params.finish()
    if let id { service.longCalls.cancel(id: id, service) }
    return NullResult()
  }
}

/// `notifications/cancelled {requestId, reason?}` (MCP): the same as `$/cancelRequest`; `reason`
/// goes into the `-32800` reply's `data.detail`.
package enum CancelledNotification: RPCMethod {
  package static let name = "notifications/cancelled"

  package static func handle(_ params: inout Params, _ service: Service) throws -> NullResult {
    let id = params.requestID("requestId")
    let reason = params.string("reason")
    _ = params.node("_meta", "object")  // MCP's NotificationMetaObject: allowed, not read
    _ = try params.finish()
    if let id { service.longCalls.cancel(id: id, reason: reason, service) }
    return NullResult()
  }
}

/// The result `null`.
package struct NullResult: MethodResult {
  package init() {}
  package func encodeJSON(into out: inout [UInt8]) { out.appendASCII("null") }
}

extension Params {
  /// A required request id param: a string or a number (`null` names no call).
  mutating func requestID(_ key: StaticString) -> RequestID? {
    guard let n = node(key) else {
      issues.error("\(key)", "missing", "\(key) is required")
      return nil
    }
    let lead = tape.lead(n)
    guard lead != UInt8(ascii: "n"), let id = RequestID(tape, n) else {
      issues.error("\(key)", "wrong_type", "\(key) must be a string or a number, not \(tape.typeName(n))")
      return nil
    }
    return id
  }
}
