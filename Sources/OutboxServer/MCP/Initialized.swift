import OutboxJSONRPC

/// `notifications/initialized`: the handshake era's client is ready (2025-11-25, basic/lifecycle).
/// A notification: never answered. Requests are served before it too.
enum Initialized: MCPMethod {
  static let name = "notifications/initialized"
  static let eras: MCPEras = .handshake

  static func handle(_ call: inout MCPCall, _ server: Server, _ result: inout MCPResultWriter) throws(RPCError) {
    server.mcp.initialized = true
  }
}
