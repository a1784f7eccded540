import OutboxDomain
import OutboxJSON

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
