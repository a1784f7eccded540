// Fuzz target: the MCP layer (Sources/OutboxServer/MCP). Input: byte 0 picks the mode, byte 1 the
// method or tool, the rest is JSON text.
// - Mode 0 and 1 (`tools/call`; 1 adds a stateless-era `_meta`): the rest is the call's `arguments`
//   for the wire method byte 1 names (modulo the method table; the ones that are no tools too).
// - Mode 2: the rest is the params of the MCP method byte 1 names (modulo `mcpMethods`).
//
// Checks: nothing traps; a request gets exactly one reply line with its id, a notification none;
// every error is one the MCP layer may answer (-32700, -32600, -32601, -32602, -32022), never
// -32603; a `tools/call` result has one text item and a boolean `isError`. When the arguments are one
// JSON value, the same params sent as a plain JSON-RPC call of the tool's method to a fresh server
// (same clock and id seed) must agree: its result is the tool's `structuredContent` and text, its
// error the tool's `isError` text; arguments that are not an object are refused as a malformed call.
import FuzzSupport
import OutboxCommandLine
import OutboxDelivery
import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxServer
import OutboxStore
import OutboxSupport
import OutboxTransport

/// The wire methods that are no tools: the methods `Protocol/openrpc.json` gives no
/// `x-mcp-annotations` (`rpc.discover`, the cancel notifications, the editor lifecycle).
let notTools: [String] = {
  let document = (try? JSONReader.parse(Array(openRPCDocument.utf8), maxDepth: 1000))?["methods"]?.arrayValue ?? []
  let withTool = Set(document.compactMap { $0["x-mcp-annotations"] == nil ? nil : $0["name"]?.stringValue })
  precondition(!withTool.isEmpty, "no tools in the embedded openrpc.json")
  return MethodTable.standard.names.filter { !withTool.contains($0) }
}()
/// The wire methods, the ones that are no tools last.
let tools = MethodTable.standard.names.filter { !notTools.contains($0) } + notTools
let mcpMethods = [
  "initialize", "ping", "server/discover", "tools/list", "tools/call", "notifications/initialized",
  "notifications/cancelled",
]
let meta =
  #""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMCP(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
  let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
  guard input.count >= 2 else { return 0 }
  let rest = Array(input.dropFirst(2))
  switch input[0] % 3 {
  case 2:
    let method = mcpMethods[Int(input[1]) % mcpMethods.count]
    let id = method.hasPrefix("notifications/") ? "" : #""id":7,"#
    let line = Array(#"{"jsonrpc":"2.0",\#(id)"method":"\#(method)","params":"#.utf8) + rest + [0x7D]
    _ = answer(line, expectReply: !id.isEmpty, input)
  default:
    let tool = tools[Int(input[1]) % tools.count]
    let head = input[0] % 3 == 1 ? meta + "," : ""
    let line =
      Array(#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{\#(head)"name":"\#(tool)","arguments":"#.utf8)
      + rest + [0x7D, 0x7D]
    guard let reply = answer(line, expectReply: true, input) else { return 0 }
    compare(reply, tool: tool, arguments: rest, input)
  }
  return 0
}

/// Sends one line to a fresh in-memory server; returns the reply (nil for none), after the checks
/// every reply must pass.
private func answer(_ line: [UInt8], expectReply: Bool, _ input: [UInt8]) -> JSONValue? {
  let output = send(line)
  if output.isEmpty {
    if expectReply { fail("no reply to a request", input) }
    return nil
  }
  // A notification's line may still be unreadable: then it gets -32700 or -32600 with id null.
  guard output.last == 0x0A, output.firstIndex(of: 0x0A) == output.count - 1 else { fail("not one reply line", input) }
  guard let reply = try? JSONReader.parse(Array(output.dropLast()), maxDepth: 1000) else {
    fail("the reply is not JSON", input)
  }
  if let error = reply["error"] {
    guard case .int(let code)? = error["code"], [-32700, -32600, -32601, -32602, -32022].contains(code) else {
      fail("an unexpected error: \(reply.jsonText)", input)
    }
    if !expectReply && code != -32700 && code != -32600 {
      fail("a notification was answered: \(reply.jsonText)", input)
    }
    return reply
  }
  guard expectReply, reply["id"] == .int(7), case .object? = reply["result"] else {
    fail("a result that no request asked for, or a malformed one: \(reply.jsonText)", input)
  }
  return reply
}

private func send(_ line: [UInt8]) -> [UInt8] {
  var config = Configuration()
  config.memory = true
  config.fixedClock = 1_767_225_600_000
  config.idSeed = 1
  let server = Server(service: Service(config: config, log: Log(level: .error)))
  line.withUnsafeBufferPointer { server.handle(line: $0) }
  server.render()
  return server.output
}

/// The tool's answer against a plain JSON-RPC call of its method with the same params.
private func compare(_ reply: JSONValue, tool: String, arguments: [UInt8], _ input: [UInt8]) {
  guard let value = try? JSONReader.parse(arguments, maxDepth: 1000) else { return }  // not one value
  guard let result = reply["result"] else {
    let code = reply["error"]?["code"]
    let shapeRefused = notTools.contains(tool) || value.objectValue == nil
    if !(code == .int(-32602) && shapeRefused) && !(code == .int(-32700)) {
      fail("tools/call refused a call of the right shape: \(reply.jsonText)", input)
    }
    return
  }
  guard value.objectValue != nil, !notTools.contains(tool) else { fail("a malformed call got a result", input) }
  guard case .array(let content)? = result["content"], content.count == 1, content[0]["type"] == .string("text"),
    let text = content[0]["text"]?.stringValue, let parsed = try? JSONReader.parse(text, maxDepth: 1000),
    case .bool(let isError)? = result["isError"]
  else { fail("a tool result without one text item and isError: \(reply.jsonText)", input) }
  let plain = Array(#"{"jsonrpc":"2.0","id":7,"method":"\#(tool)","params":"#.utf8) + arguments + [0x7D]
  guard let want = try? JSONReader.parse(Array(send(plain).dropLast()), maxDepth: 1000) else {
    fail("the plain call's reply is not JSON", input)
  }
  if let wanted = want["result"] {
    guard !isError, parsed == wanted, result["structuredContent"] == wanted else {
      fail("the tool's result differs from the method's: \(reply.jsonText) vs \(want.jsonText)", input)
    }
  } else {
    guard isError, parsed == want["error"], result["structuredContent"] == nil else {
      fail("the tool's error differs from the method's: \(reply.jsonText) vs \(want.jsonText)", input)
    }
  }
}

private func fail(_ message: String, _ input: [UInt8]) -> Never {
  fuzzFailure("FuzzMCP", message, input)
}

@_cdecl("FuzzMCP_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
  runFuzzer(argc, argv, fuzzMCP)
}
