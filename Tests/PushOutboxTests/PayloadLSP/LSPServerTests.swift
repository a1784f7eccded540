import Testing

@testable import OutboxDomain
@testable import OutboxJSON
@testable import OutboxPayloadLSP
@testable import OutboxTransport

/// `push-outbox lsp`'s engine in process: positions in both encodings, the lifecycle's error codes,
/// and coalescing (a burst of edits publishes once, at the last version).
@Suite("LSPServer")
struct LSPServerTests {
  static func frame(_ message: String) -> [UInt8] {
    Array("Content-Length: \(message.utf8.count)\r\n\r\n\(message)".utf8)
  }

  /// Runs a session over `messages` (then the end of input); returns every message written.
  static func session(_ messages: [String], chunkSize: Int = 1 << 16) -> (code: Int32, out: [JSONValue]) {
    var transport = MemoryTransport(chunkSize: chunkSize)
    transport.push(messages.flatMap(frame))
    transport.close()
    var session = LSPSession(transport: transport, server: LSPServer(), maxMessageBytes: 1 << 24)
    let code = session.run()
    var out: [JSONValue] = []
    var framer = HeaderFramer(maxLineBytes: 1 << 26)
    framer.feed(session.transport.output) { framed in
      if case .line(let body) = framed, let value = try? JSONReader.parse(Array(body)) { out.append(value) }
    }
    return (code, out)
  }

  static func initialize(encodings: [String] = []) -> String {
    let offered = encodings.map { "\"\($0)\"" }.joined(separator: ",")
    return
      #"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"general":{"positionEncodings":[\#(offered)]}}}}"#
  }

  static func open(_ text: String, uri: String = "file:///p/a.apns", version: Int = 1) -> String {
    let params = JSONValue.object([
      JSONMember(
        "textDocument",
        .object([
          JSONMember("uri", .string(uri)), JSONMember("languageId", .string("json")),
          JSONMember("version", .int(Int64(version))), JSONMember("text", .string(text)),
        ]))
    ])
    return #"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":\#(params.jsonText)}"#
  }

  static func published(_ out: [JSONValue]) -> [JSONValue] {
    out.filter { $0["method"] == .string("textDocument/publishDiagnostics") }.compactMap { $0["params"] }
  }

  @Test(
    "ranges after multi-byte and astral characters, in UTF-16 and UTF-8",
    arguments: [("utf-16", 21, 24), ("utf-8", 24, 27)])
  func rangesInBothEncodings(_ encoding: String, _ start: Int, _ end: Int) {
    // Line 1: `  "é😀": 1, "badge": "3"` — é is 1 UTF-16 unit and 2 bytes, 😀 2 units and 4 bytes.
    let text = "{\"aps\": {\n  \"é😀\": 1, \"badge\": \"3\"}}"
    let (_, out) = Self.session([Self.initialize(encodings: [encoding]), Self.open(text)])
    #expect(out.first?["result"]?["capabilities"]?["positionEncoding"] == .string(encoding))
    let diagnostics = Self.published(out).last?["diagnostics"]?.arrayValue ?? []
    let badge = diagnostics.first { $0["code"] == .string("badge-type") }
    #expect(
      badge?["range"]?["start"] == .object([JSONMember("line", .int(1)), JSONMember("character", .int(Int64(start)))]))
    #expect(badge?["range"]?["end"]?["character"] == .int(Int64(end)))
  }

  @Test("incremental edits at positions after an astral character land on the right bytes, both encodings")
  func incrementalEditsInBothEncodings() {
    for (encoding, character) in [("utf-16", 4), ("utf-8", 6)] {
      var document = LSPDocument(uri: "u", languageId: "json", version: 1, text: Array("\"😀ab\"".utf8))
      let at = Position(line: 0, character: character)
      document.replace(
        from: at, to: Position(line: 0, character: character + 1), with: Array("Z".utf8),
        PositionEncoding(rawValue: encoding)!)
      #expect(String(decoding: document.text, as: UTF8.self) == "\"😀aZ\"", "\(encoding)")
      // Half a surrogate pair or a continuation byte clamps to the character's start.
      #expect(document.offset(Position(line: 0, character: encoding == "utf-16" ? 2 : 3), .utf16) <= 5)
    }
  }

  @Test("requests before initialize get -32002, after shutdown -32600; exit is 0 after shutdown, 1 without")
  func lifecycle() {
    let hover = #"{"jsonrpc":"2.0","id":7,"method":"textDocument/hover","params":{}}"#
    let (code, out) = Self.session([
      hover, Self.initialize(), #"{"jsonrpc":"2.0","id":2,"method":"shutdown"}"#, hover,
      #"{"jsonrpc":"2.0","method":"exit"}"#,
    ])
    #expect(out.compactMap { $0["error"]?["code"] } == [.int(-32002), .int(-32600)])
    #expect(code == 0)
    let (without, _) = Self.session([Self.initialize(), #"{"jsonrpc":"2.0","method":"exit"}"#])
    #expect(without == 1)
  }

  @Test("1,000 edits in a burst publish once per document, at the last version")
  func aBurstPublishesOnlyTheLastVersion() {
    var messages = [Self.initialize(), Self.open(#"{"aps": {"badge": 0}}"#)]
    for v in 2...1001 {
      let change =
        #"{"range":{"start":{"line":0,"character":18},"end":{"line":0,"character":\#(v == 2 ? 19 : 21)}},"text":"\"\#(v % 10)\""}"#
      messages.append(
        #"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///p/a.apns","version":\#(v)},"contentChanges":[\#(change)]}}"#
      )
    }
    let (_, out) = Self.session(messages, chunkSize: 4096)
    let published = Self.published(out)
    #expect(published.map { $0["version"] } == [.int(1001)])
    #expect(published.first?["diagnostics"]?.arrayValue?.first?["code"] == .string("badge-type"))
  }

  @Test("a JSON file that is not a payload is left alone; one that becomes one is claimed")
  func claiming() {
    let other = Self.open(#"{"name": "x"}"#, uri: "file:///p/package.json")
    let payload = Self.open(#"{"aps": {"badge": "1"}}"#, uri: "file:///p/fixture.json")
    let (_, out) = Self.session([Self.initialize(), other, payload])
    #expect(Self.published(out).map { $0["uri"] } == [.string("file:///p/fixture.json")])
  }

  @Test("globs match names and paths")
  func globs() {
    #expect(Glob.matches("*.payload.json", "/a/b/x.payload.json"))
    #expect(!Glob.matches("*.payload.json", "/a/b/x.json"))
    #expect(Glob.matches("fixtures/**/*.json", "/repo/fixtures/a/b/c.json"))
    #expect(!Glob.matches("fixtures/*.json", "/repo/fixtures/a/c.json"))
  }
}
