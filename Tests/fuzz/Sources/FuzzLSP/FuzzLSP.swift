// Fuzz target: `push-outbox lsp`'s engine (Sources/OutboxPayloadLSP) over whole LSP sessions, in
// memory. Input: byte 0 flags (1: the client offers UTF-8; 2: pull diagnostics), bytes 1–2 the
// transport's chunk size (0: 64 KiB), then operations separated by 0x00, each one kind byte and its
// bytes: 0 didOpen (text), 1 didChange whole (text), 2 didChange incremental (4 bytes: start line,
// start character, end line, end character; then text), 3 hover, 4 completion, 5 codeAction (2 bytes
// each: line, character), 6 pull diagnostics, 7 a raw message body (framed), 8 raw bytes (unframed),
// 9 shutdown, 10 exit, 11 didClose, 12 didChangeConfiguration (a glob). Documents are `a.apns` and
// `b.json` (kind byte bit 4 picks). Texts are the bytes as UTF-8 (U+FFFD for what is not).
//
// Checks: nothing traps; the output is well-framed Content-Length messages of JSON; without raw
// input, every request gets exactly one reply and in order; every published version is the last one
// the client sent for that document (input all arrives in one turn, so no superseded version may
// be published); every range is ordered.
import FuzzSupport
import OutboxDomain
import OutboxJSON
import OutboxPayloadLSP
import OutboxSupport
import OutboxTransport

func frame(_ body: [UInt8]) -> [UInt8] { Array("Content-Length: \(body.count)\r\n\r\n".utf8) + body }

func message(_ id: Int?, _ method: String, _ params: JSONValue) -> [UInt8] {
  var members = [JSONMember("jsonrpc", .string("2.0"))]
  if let id { members.append(JSONMember("id", .int(Int64(id)))) }
  members += [JSONMember("method", .string(method)), JSONMember("params", params)]
  return frame(JSONValue.object(members).jsonBytes)
}

func document(_ uri: String, version: Int? = nil) -> JSONValue {
  var members = [JSONMember("uri", .string(uri))]
  if let version { members.append(JSONMember("version", .int(Int64(version)))) }
  return .object(members)
}

func position(_ line: UInt8, _ character: UInt8) -> JSONValue {
  .object([JSONMember("line", .int(Int64(line % 16))), JSONMember("character", .int(Int64(character)))])
}

@_cdecl("FuzzLSP_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
  runFuzzer(argc, argv, fuzzLSP)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLSP(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
  let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
  guard input.count >= 3 else { return 0 }
  let flags = input[0]
  let chunk = Int(input[1]) << 8 | Int(input[2])
  var stream = message(
    1, "initialize",
    .object([
      JSONMember(
        "capabilities",
        .object([
          JSONMember(
            "general", .object([JSONMember("positionEncodings", .array(flags & 1 != 0 ? [.string("utf-8")] : []))]))
        ])),
      JSONMember(
        "initializationOptions", .object([JSONMember("diagnostics", .string(flags & 2 != 0 ? "pull" : "push"))])),
    ]))
  stream += message(nil, "initialized", .object([]))
  var ids: [Int] = [1]
  var nextID = 2
  var raw = false
  var ended = false  // exit sent: nothing after it is answered
  var versions: [String: Int] = [:]
  var open = Set<String>()
  for op in input.dropFirst(3).split(separator: 0, omittingEmptySubsequences: true) {
    let kind = op.first! & 0x0F
    let uri = op.first! & 0x10 != 0 ? "file:///w/b.json" : "file:///w/a.apns"
    let body = Array(op.dropFirst())
    let text = JSONValue.string(String(decoding: body, as: UTF8.self))
    let request: (String, JSONValue) -> Void = { method, params in
      stream += message(nextID, method, params)
      if !ended { ids.append(nextID) }
      nextID += 1
    }
    let version = (versions[uri] ?? 0) + 1
    switch kind {
    case 0:
      stream += message(
        nil, "textDocument/didOpen",
        .object([
          JSONMember(
            "textDocument",
            .object([
              JSONMember("uri", .string(uri)), JSONMember("languageId", .string("json")),
              JSONMember("version", .int(Int64(version))), JSONMember("text", text),
            ]))
        ]))
      versions[uri] = version
      open.insert(uri)
    case 1, 2:
      var change = [JSONMember("text", text)]
      if kind == 2, body.count >= 4 {
        change = [
          JSONMember(
            "range",
            .object([JSONMember("start", position(body[0], body[1])), JSONMember("end", position(body[2], body[3]))])),
          JSONMember("text", .string(String(decoding: body.dropFirst(4), as: UTF8.self))),
        ]
      }
      stream += message(
        nil, "textDocument/didChange",
        .object([
          JSONMember("textDocument", document(uri, version: version)),
          JSONMember("contentChanges", .array([.object(change)])),
        ]))
      if open.contains(uri) { versions[uri] = version }
    case 3, 4:
      let at = position(body.first ?? 0, body.dropFirst().first ?? 0)
      request(
        kind == 3 ? "textDocument/hover" : "textDocument/completion",
        .object([JSONMember("textDocument", document(uri)), JSONMember("position", at)]))
    case 5:
      let a = position(body.first ?? 0, body.dropFirst().first ?? 0)
      let range = JSONValue.object([JSONMember("start", a), JSONMember("end", position(15, 255))])
      request(
        "textDocument/codeAction",
        .object([
          JSONMember("textDocument", document(uri)), JSONMember("range", range),
          JSONMember("context", .object([JSONMember("diagnostics", .array([]))])),
        ]))
    case 6: request("textDocument/diagnostic", .object([JSONMember("textDocument", document(uri))]))
    case 7:
      stream += frame(body)
      raw = true
    case 8:
      stream += body
      raw = true
    case 9: request("shutdown", .null)
    case 10:
      stream += message(nil, "exit", .null)
      ended = true
    case 11:
      stream += message(nil, "textDocument/didClose", .object([JSONMember("textDocument", document(uri))]))
      open.remove(uri)
      versions[uri] = nil
    default:
      stream += message(
        nil, "workspace/didChangeConfiguration",
        .object([JSONMember("settings", .object([JSONMember("globs", .array([text]))]))]))
    }
  }
  var transport = MemoryTransport(chunkSize: chunk == 0 ? 1 << 16 : chunk)
  transport.push(stream)
  transport.close()
  var session = LSPSession(transport: transport, server: LSPServer(), maxMessageBytes: 1 << 16)
  _ = session.run()
  check(session.transport.output, ids: raw ? nil : ids, versions: raw || ended ? nil : versions)
  return 0
}

/// The output's framing, replies and published versions.
func check(_ output: [UInt8], ids: [Int]?, versions: [String: Int]?) {
  var framer = HeaderFramer(maxLineBytes: 1 << 26)
  var replies: [Int] = []
  var messages = 0
  framer.feed(output) { framed in
    guard case .line(let body) = framed else { fatalError("the output is not Content-Length framed: \(framed)") }
    guard let value = try? JSONReader.parse(Array(body), maxDepth: 1000) else { fatalError("a message is not JSON") }
    messages += 1
    if let id = value["id"]?.intValue { replies.append(Int(id)) }
    if value["method"] == .string("textDocument/publishDiagnostics"), let versions {
      let params = value["params"]!
      let uri = params["uri"]!.stringValue!
      if let sent = versions[uri], let published = params["version"]?.intValue {
        precondition(Int(published) == sent, "published version \(published) of \(uri), last sent \(sent)")
      }
      for d in params["diagnostics"]?.arrayValue ?? [] { checkRange(d["range"]) }
    }
  }
  var end = framer
  end.finish { _ in fatalError("the output ends inside a message") }
  if let ids { precondition(replies == ids, "replies \(replies) for requests \(ids)") }
}

func checkRange(_ range: JSONValue?) {
  guard let s = range?["start"], let e = range?["end"], let sl = s["line"]?.intValue, let sc = s["character"]?.intValue,
    let el = e["line"]?.intValue, let ec = e["character"]?.intValue
  else { fatalError("a diagnostic without a range") }
  precondition(sl >= 0 && sc >= 0 && (sl, sc) <= (el, ec), "an unordered range \(sl):\(sc)-\(el):\(ec)")
}
