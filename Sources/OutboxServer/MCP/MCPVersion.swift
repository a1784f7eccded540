/// The MCP specification's versions push-outbox speaks, and what each one added that a reply shows.
///
/// Versions are an enumerated set, compared by their place in `all`, never as dates.
enum MCPVersion {
  /// Versions an `initialize` can settle, oldest first.
  static let handshake = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
  /// Versions a request may name in `_meta` (stateless era), oldest first.
  static let stateless = ["2026-07-28"]
  static let all = handshake + stateless

  /// How long a client may keep `tools/list` and `server/discover` results (the tools change only
  /// with the binary), and who may share them: nothing in them depends on the caller.
  static let cacheTTLMs: Int64 = 3_600_000
  static let cacheScope = "public"

  /// The `_meta` keys of the stateless era's per-request protocol fields (2026-07-28, basic/index).
  static let versionKey: StaticString = "io.modelcontextprotocol/protocolVersion"
  static let capabilitiesKey: StaticString = "io.modelcontextprotocol/clientCapabilities"
  static let serverInfoKey = "io.modelcontextprotocol/serverInfo"
}

/// A feature a reply carries only from the version that introduced it.
enum MCPFeature {
  /// `annotations` on tools (2025-03-26).
  case toolAnnotations
  /// `outputSchema` on tools and `structuredContent` in results (2025-06-18).
  case structuredContent
  /// `resultType`, `_meta.serverInfo`, `ttlMs` and `cacheScope` (2026-07-28).
  case statelessResult

  var since: String {
    switch self {
    case .toolAnnotations: "2025-03-26"
    case .structuredContent: "2025-06-18"
    case .statelessResult: "2026-07-28"
    }
  }
}

/// The version one request is answered in, and its era.
struct MCPEra {
  var version: String
  var isStateless: Bool

  func has(_ feature: MCPFeature) -> Bool {
    (MCPVersion.all.firstIndex(of: version) ?? 0) >= (MCPVersion.all.firstIndex(of: feature.since) ?? 0)
  }
}

/// What the handshake era's `initialize` settled for this process.
struct MCPSession {
  /// The version `initialize` answered; before any, requests without `_meta` get the newest.
  var version = MCPVersion.handshake.last!
  /// `notifications/initialized` arrived.
  var initialized = false
  /// The tools, made from the embedded OpenRPC document on first use.
  var catalog: ToolCatalog?
}
