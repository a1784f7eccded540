import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxSupport

/// `initialize {protocolVersion, capabilities, clientInfo}` → `{protocolVersion, capabilities,
/// serverInfo, instructions}`: the handshake era's version negotiation (2025-11-25, basic/lifecycle).
///
/// The answer is the client's version when it is one of `MCPVersion.handshake`, else the newest of
/// them; later requests without `_meta` are answered in that version. Transcript:
/// `Protocol/transcripts/mcp-handshake.txt`.
enum Initialize: MCPMethod {
  static let name = "initialize"
  static let eras: MCPEras = .handshake

  static func handle(_ call: inout MCPCall, _ server: Server, _ result: inout MCPResultWriter) throws(RPCError) {
    let requested = call.params.string("protocolVersion", required: true)
    _ = call.params.node("capabilities", "object", required: true)
    _ = call.params.node("clientInfo", "object", required: true)
    try call.check()
    let version = MCPVersion.handshake.first { sameText($0, requested!) } ?? MCPVersion.handshake.last!
    server.mcp.version = version
    server.mcp.initialized = false
    result.member("protocolVersion", .string(version))
    result.member("capabilities", capabilities)
    result.member("serverInfo", Server.mcpServerInfo)
    result.member("instructions", .string(instructions))
  }

  /// Tools only, and their list never changes while the process runs.
  static let capabilities: JSONValue = .object([
    JSONMember("tools", .object([JSONMember("listChanged", .bool(false))]))
  ])

  /// Guidance for a model using the tools (MCP's `instructions`).
  static let instructions =
    "push-outbox holds analytics for Braze (custom events, custom attributes, user attributes) until "
    + "they are handed out. Save them with the save tools; the flush tool hands them out (with a lease: "
    + "acknowledge it once they are sent, or release it); the status tool reports what is held. Every "
    + "tool is a JSON-RPC method of the same name, with the same arguments and result."
}
