package import OutboxJSON
import OutboxJSONRPC
import OutboxSupport

/// The language server's state and its answers, with no I/O: `handle` takes one message body and
/// queues what goes out; `publishPending` queues `publishDiagnostics` for the documents changed since
/// the last call, each at its latest version. `LSPSession` drives it over stdio, draining all input
/// that is waiting before it publishes, so a superseded version is never published.
package final class LSPServer {
  package struct Settings: Sendable {
    /// Documents over this many bytes get one `document-too-large` diagnostic and are not read.
    package var maxDocumentBytes = 1 << 20
    /// All open documents together; a document that would pass it is dropped (and logged).
    package var maxTotalBytes = 64 << 20
    package var maxDocuments = 1024

    package init() {}
  }

  enum State { case uninitialized, running, shutDown }

  package let settings: Settings
  var state = State.uninitialized
  package internal(set) var encoding = PositionEncoding.utf16
  var documents: [String: LSPDocument] = [:]
  var totalBytes = 0
  /// Documents whose diagnostics must be published (changed, opened, closed, claimed anew).
  var dirty: [String] = []
  var dirtySet = Set<String>()
  /// What publishing last sent per document: claimed or not, so an unclaimed document is cleared once.
  var published: [String: Bool] = [:]
  var globs: [String] = []
  /// Push diagnostics (`publishDiagnostics`); off when the client pulls them.
  var push = true
  /// Bytes to write: whole messages, each `Content-Length`-framed by the session.
  package private(set) var outbox: [[UInt8]] = []
  /// Set by `exit`: 0 after `shutdown`, 1 without.
  package private(set) var exitCode: Int32? = nil

  package init(settings: Settings = Settings()) {
    self.settings = settings
  }

  package func takeOutbox() -> [[UInt8]] {
    defer { outbox.removeAll(keepingCapacity: true) }
    return outbox
  }

  // MARK: - Messages

  /// Handles one message body (a JSON-RPC request, notification or response).
  package func handle(_ body: UnsafeBufferPointer<UInt8>) {
    let message: JSONValue
    do { message = try JSONReader.parse(Array(body), maxDepth: 64) } catch {
      return reply(.null, error: .parseError(error.reason, offset: error.offset))
    }
    guard case .object = message else {
      return reply(.null, error: .invalidRequest("a message must be a JSON object"))
    }
    let rawID = message["id"]
    let id = rawID.flatMap { RequestID($0) }
    if rawID != nil && id == nil { return reply(.null, error: .invalidRequest("id must be a string or a number")) }
    guard let method = message["method"]?.stringValue else {
      if message["result"] != nil || message["error"] != nil { return }  // a response: we sent no requests
      return reply(id ?? .null, error: .invalidRequest("method must be a string"))
    }
    let params = message["params"] ?? .null
    if let id { request(id, method, params) } else { notification(method, params) }
  }

  private func request(_ id: RequestID, _ method: String, _ params: JSONValue) {
    switch state {
    case .uninitialized where method != "initialize":
      return reply(id, error: RPCError(ErrorCode(rawValue: -32002), "Server not initialized: send initialize first"))
    case .shutDown:
      return reply(id, error: .invalidRequest("the server has shut down; only exit is accepted"))
    case .running where method == "initialize":
      return reply(id, error: .invalidRequest("initialize was already received"))
    default: break
    }
    switch method {
    case "initialize": reply(id, initialize(params))
    case "shutdown":
      state = .shutDown
      reply(id, .null)
    case "textDocument/hover": reply(id, hover(params))
    case "textDocument/completion": reply(id, completion(params))
    case "textDocument/codeAction": reply(id, codeActions(params))
    case "textDocument/diagnostic": reply(id, pullDiagnostics(params))
    default: reply(id, error: .methodNotFound(method))
    }
  }

  private func notification(_ method: String, _ params: JSONValue) {
    if method == "exit" {
      exitCode = state == .shutDown ? 0 : 1
      return
    }
    guard state == .running else { return }  // before initialize or after shutdown: dropped, as LSP says
    switch method {
    case "textDocument/didOpen": didOpen(params)
    case "textDocument/didChange": didChange(params)
    case "textDocument/didClose": didClose(params)
    case "workspace/didChangeConfiguration": configure(params["settings"])
    default: break  // initialized, $/cancelRequest, $/setTrace, didSave: nothing to do
    }
  }

  // MARK: - initialize

  private func initialize(_ params: JSONValue) -> JSONValue {
    state = .running
    let offered = params["capabilities"]?["general"]?["positionEncodings"]?.arrayValue ?? []
    encoding = offered.contains(.string("utf-8")) ? .utf8 : .utf16
    let options = params["initializationOptions"]
    configure(options)
    let pulls = params["capabilities"]?["textDocument"]?["diagnostic"] != nil
    switch options?["diagnostics"]?.stringValue {
    case "push"?, "both"?: push = true
    case "pull"?: push = false
    default: push = !pulls
    }
    let capabilities: [JSONMember] = [
      JSONMember("positionEncoding", .string(encoding.rawValue)),
      JSONMember(
        "textDocumentSync",
        .object([
          JSONMember("openClose", .bool(true)), JSONMember("change", .int(2)),
        ])),
      JSONMember("hoverProvider", .bool(true)),
      JSONMember(
        "completionProvider",
        .object([JSONMember("triggerCharacters", .array([.string("\""), .string(":")]))])),
      JSONMember("codeActionProvider", .object([JSONMember("codeActionKinds", .array([.string("quickfix")]))])),
      JSONMember(
        "diagnosticProvider",
        .object([
          JSONMember("identifier", .string("push-outbox")), JSONMember("interFileDependencies", .bool(false)),
          JSONMember("workspaceDiagnostics", .bool(false)),
        ])),
    ]
    return .object([
      JSONMember("capabilities", .object(capabilities)),
      JSONMember("serverInfo", .object([JSONMember("name", .string("push-outbox lsp"))])),
    ])
  }

  /// `globs` from `initializationOptions` or a configuration's settings (also under `push-outbox`).
  private func configure(_ settings: JSONValue?) {
    guard let settings else { return }
    let section = settings["push-outbox"] ?? settings["pushOutbox"] ?? settings
    guard let list = section["globs"]?.arrayValue else { return }
    globs = list.compactMap(\.stringValue).filter { !$0.isEmpty && $0.utf8.count <= 512 }.prefix(64).map { $0 }
    for uri in documents.keys.sorted() { markDirty(uri) }
  }

  // MARK: - Output

  func reply(_ id: RequestID, _ result: JSONValue) {
    outbox.append(Self.render(Response(id: id, .result(result))))
  }

  func reply(_ id: RequestID, error: RPCError) {
    outbox.append(Self.render(Response(id: id, .error(error))))
  }

  func notify(_ method: String, _ params: JSONValue) {
    let message = JSONValue.object([
      JSONMember("jsonrpc", .string("2.0")), JSONMember("method", .string(method)), JSONMember("params", params),
    ])
    outbox.append(message.jsonBytes)
  }

  static func render(_ response: Response) -> [UInt8] {
    var out: [UInt8] = []
    ResponseWriter.append(response, to: &out)
    return out
  }

  func log(_ message: String, type: Int64 = 2) {
    notify("window/logMessage", .object([JSONMember("type", .int(type)), JSONMember("message", .string(message))]))
  }

  /// A message the framing could not deliver: logged to the client (it has no id to answer).
  package func refuse(_ why: String) {
    log("push-outbox lsp: " + why, type: 1)
  }
}
