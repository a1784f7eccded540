// Fuzz target: `parsePayload` and the domain rules of the three save methods, through the request
// path (params reading, validation, item bodies). Input: byte 0 picks the method (modulo 5:
// parsePayload, saveCustomEvent, saveCustomAttribute, saveUserAttribute, importLegacy); the rest is
// the params text.
//
// Checks: nothing traps; one reply, with the request's id; an error is only ever -32602 (invalid
// params), -32600 or -32700 (a line that is not a request), never an internal error; a save that
// succeeds stores bodies that each make a JSON object without duplicate keys; and the fast save
// path writes exactly the general path's reply and stored items.
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

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

let methods = ["parsePayload", "saveCustomEvent", "saveCustomAttribute", "saveUserAttribute", "importLegacy"]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPayload(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
  let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
  guard let selector = input.first else { return 0 }
  let method = methods[Int(selector) % methods.count]
  let line = Array(#"{"jsonrpc":"2.0","id":7,"method":"\#(method)","params":"#.utf8) + input.dropFirst() + [0x7D]
  let fast = call(line, fastSaves: true, input: input)
  let general = call(line, fastSaves: false, input: input)
  guard fast.reply == general.reply, fast.items == general.items else {
    fail("the fast path and the general path differ", input)
  }
  return 0
}

/// Sends one request line to a fresh in-memory server; returns its reply and the stored items' bodies.
private func call(_ line: [UInt8], fastSaves: Bool, input: [UInt8]) -> (reply: [UInt8], items: [[UInt8]]) {
  var config = Configuration()
  config.memory = true
  config.fixedClock = 1_767_225_600_000
  config.idSeed = 1
  let server = Server(service: Service(config: config, log: Log(level: .error)))
  server.fastSaves = fastSaves && server.fastSaves
  line.withUnsafeBufferPointer { server.handle(line: $0) }
  server.render()
  let reply = server.output
  guard reply.last == 0x0A, reply.firstIndex(of: 0x0A) == reply.count - 1 else { fail("not one reply line", input) }
  guard let value = try? JSONReader.parse(Array(reply.dropLast())) else { fail("the reply is not JSON", input) }
  if let error = value["error"] {
    guard case .int(let code)? = error["code"], [-32602, -32600, -32700].contains(code) else {
      fail("an unexpected error: \(value.jsonText)", input)
    }
    return (reply, [])
  }
  guard value["id"] == .int(7), case .object? = value["result"] else { fail("a malformed reply", input) }
  let items = server.service.store.items
  let bodies = items.table.rows.map { Array(items.body(row: $0)) }
  for body in bodies {
    guard body.first == UInt8(ascii: ","), let object = try? JSONReader.parse([0x7B] + body.dropFirst() + [0x7D]),
      !hasDuplicateKey(object)
    else { fail("a stored body that is not a JSON object's members: \(String(decoding: body, as: UTF8.self))", input) }
  }
  return (reply, bodies)
}

private func fail(_ message: String, _ input: [UInt8]) -> Never {
  fuzzFailure("FuzzPayload", message, input)
}

@_cdecl("FuzzPayload_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
  runFuzzer(argc, argv, fuzzPayload)
}
