import OutboxDomain
import OutboxJSON
import OutboxJSONRPC

/// `tools/list {cursor?}` → `{tools}` (MCP server/tools): one tool per wire method (`ToolCatalog`),
/// on one page (any `cursor` is `-32602`), in a fixed order. In the stateless era also `ttlMs` and `cacheScope` (2026-07-28,
/// server/utilities/caching). Transcripts: `Protocol/transcripts/mcp-*.txt`.
enum ToolsList: MCPMethod {
  static let name = "tools/list"

  static func handle(_ call: inout MCPCall, _ server: Server, _ result: inout MCPResultWriter) throws(RPCError) {
    if call.params.node("cursor", "string") != nil {
      // One page: no `nextCursor` is ever given, so no cursor is valid (server/utilities/pagination).
      call.params.issues.error(
        "cursor", "invalid_cursor", "cursor was not given by this server: tools/list has one page")
    }
    try call.check()
    if server.mcp.catalog == nil { server.mcp.catalog = ToolCatalog(table: server.table) }
    result.member("tools", server.mcp.catalog!.json(for: call.era))
    if call.era.isStateless {
      result.member("ttlMs", .int(MCPVersion.cacheTTLMs))
      result.member("cacheScope", .string(MCPVersion.cacheScope))
    }
  }
}
