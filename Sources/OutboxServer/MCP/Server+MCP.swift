import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxSupport

/// The MCP server in the same process: requests for MCP's methods (`MCPTable`) get here when the
/// method table does not know their name, and are answered in the era each belongs to.
extension Server {
  /// Appends the reply to an MCP request to the burst (for a notification too: the caller drops it),
  /// or returns the long work whose end answers it (`startLong`).
  func answerMCP(_ request: Request) -> LongStart? {
    let id = request.id ?? .null
    do {
      switch try runMCP(request) {
      case .result(let result):
        burst.write { draft in
          ResponseWriter.beginResult(id: id, to: &draft)
          draft.append(contentsOf: result)
          ResponseWriter.endResult(to: &draft)
        }
      case .long(let start):
        return start
      }
    } catch {
      if request.isNotification { service.log.debug("notification \(request.method) failed: \(error.message)") }
      burst.write { ResponseWriter.append(Response(id: id, .error(error)), to: &$0) }
    }
    return nil
  }

  private enum MCPAnswer {
    case result([UInt8])
    case long(LongStart)
  }

  /// The result object of an MCP request, or its long work, or the error to answer with.
  private func runMCP(_ request: Request) throws(RPCError) -> MCPAnswer {
    guard let method = MCPTable.standard.method(request) else { throw .methodNotFound(request.method) }
    var call = try MCPCall(request, session: mcp)
    if call.era.isStateless && !method.eras.contains(.stateless) {
      // `initialize` and `ping` do not exist in the stateless era (2026-07-28 changelog, items 2 and 5).
      throw .methodNotFound(request.method)
    }
    if !call.era.isStateless && !method.eras.contains(.handshake) {
      let key = "_meta.\(MCPVersion.versionKey)"
      throw .invalidParams(path: key, code: "missing", "\(request.method) needs \(key): it exists from 2026-07-28")
    }
    var result = MCPResultWriter(era: call.era)
    try method.handle(&call, self, &result)
    if let long = call.long { return .long(long) }
    return .result(result.close())
  }

  /// `serverInfo`: the OpenRPC document's title, and the build's version.
  static let mcpServerInfo: JSONValue = .object([
    JSONMember("name", ToolCatalog.document["info"]?["title"] ?? .string("")),
    JSONMember("version", .string(embeddedVersion)),
  ])
}
