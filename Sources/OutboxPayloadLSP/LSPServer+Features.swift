import OutboxDomain
import OutboxJSON

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
    guard var (document, offset) = located(params),
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
    guard var (document, offset) = located(params) else { return .null }
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
