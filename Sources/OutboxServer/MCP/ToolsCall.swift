import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxStore
import OutboxSupport

/// `tools/call {name, arguments?}` → `{content, structuredContent, isError}` (MCP server/tools):
/// runs the wire method `name` with `arguments` as its params, through the method table, exactly
/// as a JSON-RPC call of that method runs.
///
/// - The method's result is `structuredContent`, and its JSON text the one `text` content item.
/// - An error the method answers (invalid params, store full, lease not found, …) is a result with
///   `isError: true` whose text is the JSON-RPC error object, `{code, message, data}`.
/// - An unknown tool, a `name` or `arguments` of the wrong type, and `-32603` (a bug in the server)
///   are JSON-RPC errors, `-32602` with `data.errors` for the first two.
/// Transcripts: `Protocol/transcripts/mcp-*.txt`.
enum ToolsCall: MCPMethod {
  static let name = "tools/call"

  static func handle(_ call: inout MCPCall, _ server: Server, _ result: inout MCPResultWriter) throws(RPCError) {
    let nameNode = call.params.node("name", "string", required: true)
    let arguments = call.params.node("arguments", "object") ?? -1
    let progressToken = call.progressToken()
    try call.check()
    let request = call.request
    let tool = request.tape.string(nameNode!)
    guard ToolCatalog.isTool(tool, in: server.table) else {
      throw .invalidParams(
        path: "name", code: "unknown_tool", "no tool is named \"\(tool)\"; \(ToolsList.name) lists them")
    }
    let method = Request(
      id: request.id, tape: request.tape, methodNode: nameNode!, paramsNode: arguments,
      mayHaveDuplicateKeys: request.mayHaveDuplicateKeys, known: server.table.known)
    switch server.runTool(method) {
    case .done(let outcome):
      try write(outcome, era: call.era, into: &result)
    case .long(var start):
      // A long method (`LongCalls`): the tool result is written when its work ends, and progress
      // goes to this call's `_meta.progressToken`.
      if let progressToken { start.progress.mcp = progressToken }
      call.long = LongStart(start.work, progress: start.progress, finish: finish(era: call.era))
    }
  }

  /// The tool result a long method's outcome becomes. A cancelled call gets no reply: MCP's server
  /// does not answer a request the client cancelled (basic/utilities/cancellation: SHOULD NOT in
  /// 2025-11-25; on stdio, MUST NOT in 2026-07-28).
  private static func finish(era: MCPEra) -> LongStart.Finish {
    { outcome in
      if case .failure(let error) = outcome, error.code == .requestCancelled { return nil }
      let json = outcome.map { result in
        var out: [UInt8] = []
        result.encodeJSON(into: &out)
        return out
      }
      var writer = MCPResultWriter(era: era)
      do throws(RPCError) {
        try write(json, era: era, into: &writer)
      } catch {
        return .failure(error)
      }
      return .success(RawJSON(bytes: writer.close()))
    }
  }

  /// Writes a method's outcome as a tool result: its result as `structuredContent` and text, or its
  /// error as `isError` text. `-32603` (a bug in the server) stays a JSON-RPC error.
  static func write(
    _ outcome: Result<[UInt8], RPCError>, era: MCPEra, into result: inout MCPResultWriter
  )
    throws(RPCError)
  {
    switch outcome {
    case .success(let json):
      result.member("content", textContent(json))
      if era.has(.structuredContent) { result.member("structuredContent", json: json) }
      result.member("isError", .bool(false))
    case .failure(let error) where error.code == .internalError:
      throw error
    case .failure(let error):
      result.member("content", textContent(error.jsonBytes))
      result.member("isError", .bool(true))
    }
  }

  /// `[{"type": "text", "text": JSON}]`.
  private static func textContent(_ json: [UInt8]) -> JSONValue {
    .array([
      .object([JSONMember("type", .string("text")), JSONMember("text", .string(String(decoding: json, as: UTF8.self)))])
    ])
  }
}

extension RPCError {
  /// The error object's JSON text, `{code, message, data}`.
  var jsonBytes: [UInt8] {
    var out: [UInt8] = []
    encodeJSON(into: &out)
    return out
  }
}

/// JSON text already written, as a result.
struct RawJSON: JSONEncodable, Sendable {
  var bytes: [UInt8]
  func encodeJSON(into out: inout [UInt8]) { out.append(contentsOf: bytes) }
}

/// How a wire method run as a tool ended: now, or as long work whose end answers the call.
enum ToolRun {
  case done(Result<[UInt8], RPCError>)
  case long(LongStart)
}

extension Server {
  /// Runs one wire method as a JSON-RPC call of it runs: earlier saves committed first when the
  /// method needs that, then the method table; a result that waits for the journal commit is
  /// committed now. Returns the result's JSON or the error the call would be answered with, or the
  /// long work a long method started.
  func runTool(_ request: Request) -> ToolRun {
    let method = table.method(request)
    if method?.commitsFirst == true { commit() }
    var out: [UInt8] = []
    do {
      guard let waiting = try table.call(method, request, service, into: &out) else { return .done(.success(out)) }
      if case .long(let start) = waiting { return .long(start) }
      if let refusal = commit() {
        countRefusal(of: request.method, refusal)
        return .done(.failure(refusal))
      }
      switch waiting {
      case .save(let save):
        if !save.receipt.duplicate { service.counters.countSave(save.kind) }
        save.encodeJSON(into: &out)
      case .other(let result):
        result.encodeJSON(into: &out)
      case .long:
        break
      }
      return .done(.success(out))
    } catch {
      countRefusal(of: request.method, error)
      return .done(.failure(error))
    }
  }
}
