import OutboxJSON
import OutboxJSONRPC

/// `server/discover` → `{supportedVersions, capabilities, instructions, ttlMs, cacheScope}` and the
/// stateless era's common members (2026-07-28, server/discover). Only in the stateless era: without
/// `_meta`'s protocol version it is `-32602`. Transcript: `Protocol/transcripts/mcp-stateless.txt`.
enum ServerDiscover: MCPMethod {
  static let name = "server/discover"
  static let eras: MCPEras = .stateless

  static func handle(_ call: inout MCPCall, _ server: Server, _ result: inout MCPResultWriter) throws(RPCError) {
    result.member("supportedVersions", .array(MCPVersion.stateless.map(JSONValue.string)))
    result.member("capabilities", Initialize.capabilities)
    result.member("instructions", .string(Initialize.instructions))
    result.member("ttlMs", .int(MCPVersion.cacheTTLMs))
    result.member("cacheScope", .string(MCPVersion.cacheScope))
  }
}
