import OutboxJSON
import OutboxJSONRPC
import OutboxServer
import OutboxTransport

/// Calls wire methods of an in-process `Server` exactly as a client would over the pipe: a request
/// line into the real loop over a memory transport, the reply line out. The one-shot commands use
/// it, so they run the very code (framing, rules, leases, commits, periodic work) that serves requests.
struct InProcessCaller {
  private var loop: RequestLoop<MemoryTransport>
  private var lastID: Int64 = 0

  var server: Server { loop.server }

  /// A JSON-RPC error reply.
  struct Failure: Error {
    var code: Int
    var text: String
  }

  init(server: Server) {
    loop = RequestLoop(server: server, transport: MemoryTransport())
  }

  mutating func call(_ method: String, _ params: [JSONMember]) -> Result<JSONValue, Failure> {
    lastID += 1
    var line: [UInt8] = []
    JSONValue.object([
      JSONMember("jsonrpc", .string("2.0")), JSONMember("id", .int(lastID)), JSONMember("method", .string(method)),
      JSONMember("params", .object(params)),
    ]).encodeJSON(into: &line)
    line.append(UInt8(ascii: "\n"))
    loop.push(line)
    _ = loop.runUntilIdle()
    var output = loop.takeOutput()
    while output.isEmpty && !server.service.longCalls.isEmpty {  // a long call (a large flush) answers later
      server.service.longCalls.wait(server.service)
      _ = loop.runUntilIdle()
      output += loop.takeOutput()
    }
    guard let reply = try? JSONReader.parse(Array(output.dropLast()), maxDepth: 1000) else {
      return .failure(Failure(code: ErrorCode.internalError.rawValue, text: "no reply to \(method)"))
    }
    if let result = reply["result"] { return .success(result) }
    let error = reply["error"]
    var text = error?["message"]?.stringValue ?? "error"
    if let data = error?["data"] {
      var bytes: [UInt8] = []
      data.encodeJSON(into: &bytes)
      text += " " + String(decoding: bytes, as: UTF8.self)
    }
    return .failure(Failure(code: Int(error?["code"]?.intValue ?? 0), text: text))
  }
}
