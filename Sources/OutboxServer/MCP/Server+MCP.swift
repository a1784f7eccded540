import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxSupport

/// The MCP server in the same process: a request whose name the method table does not have is
/// looked up once in `MCPTable` (`Server.call`), and an MCP method is answered in the era it belongs to.
extension Server {
  /// Handles a request for MCP method `method`. Returns true when a reply was appended to the burst.
  func call(_ method: any MCPMethod.Type, _ request: Request) -> Bool {
    if request.id != nil { burst.countRequest() }
    let mark = burst.mark
    if let long = answerMCP(method, request) { return startLong(long, id: request.id) }
    guard request.id != nil else {
      burst.discard(from: mark)  // a notification's reply is dropped
      return false
    }
    burst.countReply()
    return true
  }

  /// Appends the reply to an MCP request to the burst (for a notification too: the caller drops it),
  /// or returns the long work whose end answers it (`startLong`).
  private func answerMCP(_ method: any MCPMethod.Type, _ request: Request) -> LongStart? {
    let id = request.id ?? .null
    do {
      switch try runMCP(method, request) {
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
  private func runMCP(_ method: any MCPMethod.Type, _ request: Request) throws(RPCError) -> MCPAnswer {
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
