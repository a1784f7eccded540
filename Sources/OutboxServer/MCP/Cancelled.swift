import OutboxJSONRPC

/// `notifications/cancelled {requestId, reason?}` (MCP, both eras): a notification, never answered.
/// Every request is answered before the next is read, so there is nothing left to cancel.
enum Cancelled: MCPMethod {
  static let name = "notifications/cancelled"

  static func handle(_ call: inout MCPCall, _ server: Server, _ result: inout MCPResultWriter) throws(RPCError) {}
}
