import OutboxJSONRPC

/// `ping` → `{}` (2025-11-25, basic/utilities/ping). The stateless era removed it (2026-07-28
/// changelog, item 5): a `ping` whose `_meta` names a version is `-32601`.
enum Ping: MCPMethod {
  static let name = "ping"
  static let eras: MCPEras = .handshake

  static func handle(_ call: inout MCPCall, _ server: Server, _ result: inout MCPResultWriter) throws(RPCError) {}
}
