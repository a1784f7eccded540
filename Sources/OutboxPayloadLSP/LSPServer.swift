import OutboxDomain
import OutboxJSON
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
  private var state = State.uninitialized
  package internal(set) var encoding = PositionEncoding.utf16
  private var documents: [String: LSPDocument] = [:]
  private var totalBytes = 0
  /// Documents whose diagnostics must be published (changed, opened, closed, claimed anew).
  private var dirty: [String] = []
  private var dirtySet = Set<String>()
  /// What publishing last sent per document: claimed or not, so an unclaimed document is cleared once.
  private var published: [String: Bool] = [:]
  private var globs: [String] = []
  /// Push diagnostics (`publishDiagnostics`); off when the client pulls them.
  private var push = true
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

// MARK: - Documents

/// Opening, changing and closing documents; which documents are payloads; publishing.
extension LSPServer {
  func didOpen(_ params: JSONValue) {
    guard let item = params["textDocument"], let uri = item["uri"]?.stringValue,
      let text = item["text"]?.stringValue
    else { return }
    if let old = documents.removeValue(forKey: uri) { totalBytes -= old.text.count }
    let bytes = Array(text.utf8)
    guard admit(uri, adding: bytes.count) else { return }
    documents[uri] = LSPDocument(
      uri: uri, languageId: item["languageId"]?.stringValue ?? "", version: item["version"]?.intValue ?? 0,
      text: bytes)
    totalBytes += bytes.count
    markDirty(uri)
  }

  func didChange(_ params: JSONValue) {
    guard let uri = params["textDocument"]?["uri"]?.stringValue, var document = documents.removeValue(forKey: uri)
    else { return }
    totalBytes -= document.text.count
    for change in params["contentChanges"]?.arrayValue ?? [] {
      guard let text = change["text"]?.stringValue else { continue }
      if let range = change["range"], let start = Self.position(range["start"]), let end = Self.position(range["end"]) {
        document.replace(from: start, to: end, with: Array(text.utf8), encoding)
      } else {
        document.replaceAll(Array(text.utf8))
      }
      guard document.text.count <= settings.maxTotalBytes else { break }
    }
    if let version = params["textDocument"]?["version"]?.intValue { document.version = version }
    guard admit(uri, adding: document.text.count) else { return markDirty(uri) }
    totalBytes += document.text.count
    documents[uri] = document
    markDirty(uri)
  }

  func didClose(_ params: JSONValue) {
    guard let uri = params["textDocument"]?["uri"]?.stringValue, let old = documents.removeValue(forKey: uri) else {
      return
    }
    totalBytes -= old.text.count
    markDirty(uri)
  }

  /// Whether a document of `bytes` fits the memory bounds; logs when it does not.
  private func admit(_ uri: String, adding bytes: Int) -> Bool {
    guard totalBytes + bytes <= settings.maxTotalBytes, documents.count < settings.maxDocuments else {
      log("push-outbox lsp: \(uri) is not kept: open documents would pass the server's memory bound")
      return false
    }
    return true
  }

  static func position(_ value: JSONValue?) -> Position? {
    guard let line = value?["line"]?.intValue, let character = value?["character"]?.intValue,
      line >= 0, character >= 0, line <= Int32.max, character <= Int32.max
    else { return nil }
    return Position(line: Int(line), character: Int(character))
  }

  func markDirty(_ uri: String) {
    if dirtySet.insert(uri).inserted { dirty.append(uri) }
  }

  // MARK: - Claiming

  /// Whether the server speaks for this document: an `.apns` file, a glob from the configuration,
  /// or JSON whose top level has `aps` or `Simulator Target Bundle`.
  func claims(_ document: inout LSPDocument) -> Bool {
    let path = Self.path(of: document.uri)
    if path.hasSuffix(".apns") || globs.contains(where: { Glob.matches($0, path) }) { return true }
    let json = document.languageId == "json" || document.languageId == "jsonc" || path.hasSuffix(".json")
    guard json else { return false }
    if document.text.count > settings.maxDocumentBytes { return false }
    let root = document.check(limit: settings.maxDocumentBytes).tree.root
    return root?.member("aps") != nil || root?.member("Simulator Target Bundle") != nil
  }

  /// The path of a `file:` URI, percent-decoded; other URIs as they are.
  static func path(of uri: String) -> String {
    var rest = Substring(uri)
    if rest.hasPrefix("file://") { rest = rest.dropFirst(7) }
    guard rest.contains("%") else { return String(rest) }
    var out: [UInt8] = []
    var bytes = Array(rest.utf8)[...]
    while let b = bytes.popFirst() {
      if b == UInt8(ascii: "%"), bytes.count >= 2,
        let v = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16)
      {
        out.append(v)
        bytes = bytes.dropFirst(2)
      } else {
        out.append(b)
      }
    }
    return String(decoding: out, as: UTF8.self)
  }

  // MARK: - Diagnostics

  /// Queues `publishDiagnostics` for every document changed since the last call, at its current version.
  package func publishPending() {
    let uris = dirty
    dirty.removeAll()
    dirtySet.removeAll()
    guard push, state == .running else { return }
    for uri in uris {
      var items: [JSONValue] = []
      var version: JSONValue? = nil
      var claimed = false
      if var document = documents[uri] {
        claimed = claims(&document)
        if claimed { items = diagnostics(&document) }
        version = .int(document.version)
        documents[uri] = document
      }
      if !claimed && published[uri] != true { continue }  // never claimed: nothing to clear
      published[uri] = claimed ? true : nil
      var params = [JSONMember("uri", .string(uri))]
      if let version { params.append(JSONMember("version", version)) }
      params.append(JSONMember("diagnostics", .array(items)))
      notify("textDocument/publishDiagnostics", .object(params))
    }
  }

  /// `textDocument/diagnostic`: a full report, empty for a document that is not a payload.
  func pullDiagnostics(_ params: JSONValue) -> JSONValue {
    var items: [JSONValue] = []
    if let uri = params["textDocument"]?["uri"]?.stringValue, var document = documents[uri] {
      if claims(&document) { items = diagnostics(&document) }
      documents[uri] = document
    }
    return .object([JSONMember("kind", .string("full")), JSONMember("items", .array(items))])
  }

  func diagnostics(_ document: inout LSPDocument) -> [JSONValue] {
    let findings = document.check(limit: settings.maxDocumentBytes).findings
    return findings.map { diagnostic($0, document) }
  }

  func diagnostic(_ finding: PayloadFinding, _ document: LSPDocument) -> JSONValue {
    let rule = finding.rule
    var members = [
      JSONMember("range", range(finding.start, finding.end, document)),
      JSONMember("severity", .int(Int64(rule?.severity.rawValue ?? 1))),
      JSONMember("code", .string(finding.code)),
    ]
    if let href = rule?.href {
      members.append(JSONMember("codeDescription", .object([JSONMember("href", .string(href))])))
    }
    members += [
      JSONMember("source", .string("push-outbox")), JSONMember("message", .string(finding.message)),
      JSONMember("data", .object([JSONMember("path", .string(finding.path))])),
    ]
    return .object(members)
  }

  func range(_ start: Int, _ end: Int, _ document: LSPDocument) -> JSONValue {
    .object([
      JSONMember("start", Self.json(document.position(start, encoding))),
      JSONMember("end", Self.json(document.position(end, encoding))),
    ])
  }

  static func json(_ p: Position) -> JSONValue {
    .object([JSONMember("line", .int(Int64(p.line))), JSONMember("character", .int(Int64(p.character)))])
  }
}

// MARK: - Features

/// Hover, completion and quick fixes, all from `PayloadRules`' tables.
extension LSPServer {
  /// The claimed document and the byte offset a `TextDocumentPositionParams` points at.
  func located(_ params: JSONValue) -> (document: LSPDocument, offset: Int)? {
    guard let uri = params["textDocument"]?["uri"]?.stringValue, var document = documents[uri],
      let position = Self.position(params["position"]), claims(&document)
    else { return nil }
    documents[uri] = document
    return (document, document.offset(position, encoding))
  }

  // MARK: - Hover

  func hover(_ params: JSONValue) -> JSONValue {
    guard case (var document, let offset)? = located(params),
      let root = document.check(limit: settings.maxDocumentBytes).tree.root,
      let (path, member) = Self.member(at: offset, in: root, path: ""),
      let text = PayloadRules.hover(forKey: path)
    else { return .null }
    return .object([
      JSONMember("contents", .object([JSONMember("kind", .string("markdown")), JSONMember("value", .string(text))])),
      JSONMember("range", range(member.keyStart, member.keyEnd, document)),
    ])
  }

  /// The innermost member whose key or value holds `offset`, with its dotted path.
  static func member(at offset: Int, in node: PayloadNode, path: String) -> (String, PayloadMember)? {
    for m in node.members {
      let here = path.isEmpty ? m.key : path + "." + m.key
      if offset >= m.keyStart && offset < m.keyEnd { return (here, m) }
      if offset >= m.value.start && offset < m.value.end {
        if m.value.kind == .object, let inner = member(at: offset, in: m.value, path: here) { return inner }
        return (here, m)
      }
    }
    return nil
  }

  // MARK: - Completion

  func completion(_ params: JSONValue) -> JSONValue {
    guard case (var document, let offset)? = located(params) else { return .null }
    let tree = document.check(limit: settings.maxDocumentBytes).tree
    guard let root = tree.root, root.kind == .object else {
      return .array(keyItems(parent: "", present: [], replace: (offset, offset), document))
    }
    let context = CompletionContext(document.text, offset)
    let (objectPath, object) = Self.object(at: offset, in: root, path: "")
    if let key = context.key {
      let path = objectPath.isEmpty ? key : objectPath + "." + key
      return .array(valueItems(path: path, replace: context.token, document))
    }
    let present = Set(object.members.filter { !($0.keyStart <= offset && offset <= $0.keyEnd) }.map(\.key))
    return .array(keyItems(parent: objectPath, present: present, replace: context.token, document))
  }

  /// The innermost object holding `offset`, with its dotted path.
  static func object(at offset: Int, in node: PayloadNode, path: String) -> (String, PayloadNode) {
    for m in node.members
    where m.value.kind == .object && offset > m.value.start && offset < Swift.max(m.value.end, m.value.start + 1) {
      return object(at: offset, in: m.value, path: path.isEmpty ? m.key : path + "." + m.key)
    }
    return (path, node)
  }

  private func keyItems(
    parent: String, present: Set<String>, replace: (Int, Int), _ document: LSPDocument
  ) -> [JSONValue] {
    PayloadRules.keys.filter { $0.parent == parent && !present.contains($0.name) }.enumerated().map { n, key in
      let text = JSONValue.string(key.name).jsonText + ": " + key.insert
      return item(
        label: key.name, kind: 10, detail: key.about, path: key.path, text: text, filter: "\"" + key.name + "\"",
        sort: n, replace, document)
    }
  }

  private func valueItems(path: String, replace: (Int, Int), _ document: LSPDocument) -> [JSONValue] {
    guard let key = PayloadRules.keyByPath[path] else { return [] }
    var values = key.values.map { JSONValue.string($0).jsonText }
    if values.isEmpty && (key.insert == "1" || key.insert == "true") { values = [key.insert] }
    return values.enumerated().map { n, value in
      item(
        label: value, kind: 20, detail: key.about, path: path, text: value, filter: value, sort: n, replace, document)
    }
  }

  private func item(
    label: String, kind: Int, detail: String, path: String, text: String, filter: String, sort: Int,
    _ replace: (Int, Int), _ document: LSPDocument
  ) -> JSONValue {
    var members = [
      JSONMember("label", .string(label)), JSONMember("kind", .int(Int64(kind))), JSONMember("detail", .string(detail)),
    ]
    if let hover = PayloadRules.hover(forKey: path) {
      members.append(
        JSONMember(
          "documentation", .object([JSONMember("kind", .string("markdown")), JSONMember("value", .string(hover))])))
    }
    members += [
      JSONMember("sortText", .string(String(1000 + sort))), JSONMember("filterText", .string(filter)),
      JSONMember("insertTextFormat", .int(1)),
      JSONMember(
        "textEdit",
        .object([JSONMember("range", range(replace.0, replace.1, document)), JSONMember("newText", .string(text))])),
    ]
    return .object(members)
  }

  // MARK: - Code actions

  func codeActions(_ params: JSONValue) -> JSONValue {
    guard let uri = params["textDocument"]?["uri"]?.stringValue, var document = documents[uri], claims(&document),
      let start = Self.position(params["range"]?["start"]), let end = Self.position(params["range"]?["end"])
    else { return .array([]) }
    let (a, b) = (document.offset(start, encoding), document.offset(end, encoding))
    let findings = document.check(limit: settings.maxDocumentBytes).findings
    documents[uri] = document
    var actions: [JSONValue] = []
    for finding in findings where finding.start <= b && a <= finding.end {
      guard let fix = finding.fix else { continue }
      let edits = fix.edits.map { edit -> JSONValue in
        .object([JSONMember("range", range(edit.start, edit.end, document)), JSONMember("newText", .string(edit.text))])
      }
      actions.append(
        .object([
          JSONMember("title", .string(fix.title)), JSONMember("kind", .string("quickfix")),
          JSONMember("diagnostics", .array([diagnostic(finding, document)])), JSONMember("isPreferred", .bool(true)),
          JSONMember(
            "edit", .object([JSONMember("changes", .object([JSONMember(uri, .array(edits))]))])),
        ]))
    }
    return .array(actions)
  }
}

/// What the text around the cursor says about a completion: the token to replace (a string the
/// cursor is in, or a bare word), and, at a value's place, the key it is the value of.
struct CompletionContext {
  var token: (Int, Int)
  var key: String?

  init(_ text: [UInt8], _ offset: Int) {
    let offset = Swift.min(offset, text.count)
    var lineStart = offset
    while lineStart > 0, text[lineStart - 1] != 0x0A { lineStart -= 1 }
    // A string the cursor is in: an odd number of unescaped quotes before it on its line.
    var quote: Int? = nil
    var i = lineStart
    while i < offset {
      if text[i] == UInt8(ascii: "\\") && quote != nil {
        i += 2
        continue
      }
      if text[i] == UInt8(ascii: "\"") { quote = quote == nil ? i : nil }
      i += 1
    }
    var start = offset
    var end = offset
    if let quote {
      start = quote
      while end < text.count, text[end] != 0x0A, text[end] != UInt8(ascii: "\"") { end += 1 }
      if end < text.count, text[end] == UInt8(ascii: "\"") { end += 1 }
    } else {
      let word: (UInt8) -> Bool = { $0 > 0x20 && !"{}[],:\"".utf8.contains($0) }
      while start > lineStart, word(text[start - 1]) { start -= 1 }
      while end < text.count, word(text[end]) { end += 1 }
    }
    token = (start, Swift.min(end, text.count))
    // The byte before the token: ':' means a value's place; then the key is the string before it.
    var j = start
    while j > 0, [0x20, 0x09, 0x0A, 0x0D].contains(text[j - 1]) { j -= 1 }
    guard j > 0, text[j - 1] == UInt8(ascii: ":") else { return }
    j -= 1
    while j > 0, [0x20, 0x09, 0x0A, 0x0D].contains(text[j - 1]) { j -= 1 }
    guard j > 0, text[j - 1] == UInt8(ascii: "\"") else { return }
    let close = j - 1
    var open = close - 1
    while open >= 0, !(text[open] == UInt8(ascii: "\"") && (open == 0 || text[open - 1] != UInt8(ascii: "\\"))) {
      open -= 1
    }
    guard open >= 0 else { return }
    key = String(decoding: text[(open + 1)..<close], as: UTF8.self)
  }
}
