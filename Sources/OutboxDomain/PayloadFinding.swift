package import OutboxJSON

/// How much a finding matters, with LSP's `DiagnosticSeverity` numbers.
package enum PayloadSeverity: Int, Sendable, CaseIterable {
  case error = 1, warning = 2, information = 3, hint = 4

  package var name: String {
    switch self {
    case .error: "error"
    case .warning: "warning"
    case .information: "information"
    case .hint: "hint"
    }
  }
}

/// One problem in a payload's text: a rule's code, the JSON path it is about, the bytes it covers
/// (`start..<end` of the source), a sentence, and a fix when there is a sure one.
package struct PayloadFinding: Sendable, Equatable {
  package var code: String
  package var path: String
  package var start: Int
  package var end: Int
  package var message: String
  package var fix: PayloadFix? = nil

  package init(code: String, path: String, start: Int, end: Int, message: String, fix: PayloadFix? = nil) {
    self.code = code
    self.path = path
    self.start = start
    self.end = end
    self.message = message
    self.fix = fix
  }

  /// The rule this finding comes from.
  package var rule: PayloadRule? { PayloadRules.byCode[code] }

  /// The wire form `parsePayload` returns in `diagnostics`; `start`/`end` (UTF-8 byte offsets) only
  /// when the payload came as text, since an object has no text of its own.
  package func json(withRange: Bool) -> JSONValue {
    var members = [
      JSONMember("code", .string(code)), JSONMember("severity", .string(rule?.severity.name ?? "error")),
      JSONMember("path", .string(path)), JSONMember("message", .string(message)),
    ]
    if withRange { members += [JSONMember("start", .int(Int64(start))), JSONMember("end", .int(Int64(end)))] }
    if let href = rule?.href { members.append(JSONMember("href", .string(href))) }
    return .object(members)
  }
}

/// Text edits that repair one finding, as byte ranges of the source and their replacements.
package struct PayloadFix: Sendable, Equatable {
  package struct Edit: Sendable, Equatable {
    package var start: Int
    package var end: Int
    package var text: String
  }

  package var title: String
  package var edits: [Edit]

  package init(_ title: String, _ edits: [Edit]) {
    self.title = title
    self.edits = edits
  }

  /// `source` with the edits applied (they do not overlap; applied from the last).
  package func applied(to source: [UInt8]) -> [UInt8] {
    var out = source
    for edit in edits.sorted(by: { $0.start > $1.start }) {
      out.replaceSubrange(edit.start..<edit.end, with: Array(edit.text.utf8))
    }
    return out
  }
}
