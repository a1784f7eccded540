package import OutboxJSON

/// How messages are delimited on the wire (`--framing`).
///
/// - `newline`: one JSON text per line (the MCP stdio transport, shell pipelines).
/// - `contentLength`: the LSP base protocol, `Content-Length: N\r\n\r\n` then N bytes of body
///   (vscode-jsonrpc, Emacs `jsonrpc.el`, LSP4J, pygls).
/// - `auto`: decided once per process from the first bytes of input (`MessageFramer`).
package enum Framing: String, CaseIterable, Sendable {
  case auto
  case newline
  case contentLength = "content-length"
}

/// A fault in a Content-Length header, answered with one `-32700` whose `data.reason` is `reason`.
/// A fatal one leaves no way to find where the next message starts: the process stops.
package struct HeaderFault: Sendable, Equatable {
  /// `missing_content_length`, `bad_content_length`, `unsupported_charset`, `header_too_long`,
  /// `bad_header`, `bad_line_ending`, `truncated_header` or `truncated_body`.
  package var reason: String
  package var detail: String
  package var fatal: Bool
  /// Extra members for `error.data` after `reason` and `detail` (a limit, a length, the charset named).
  package var facts: [JSONMember] = []

  package init(_ reason: String, _ detail: String, fatal: Bool, _ facts: [JSONMember] = []) {
    self.reason = reason
    self.detail = detail
    self.fatal = fatal
    self.facts = facts
  }

  /// Equal reasons, details and fatality (the facts follow from them).
  package static func == (a: HeaderFault, b: HeaderFault) -> Bool {
    a.reason == b.reason && a.detail == b.detail && a.fatal == b.fatal
  }
}

extension Transport {
  /// Writes the loop's reply bytes (whole lines, each ending in `\n`) in `framing`: as they are,
  /// or each line as one Content-Length message without its `\n`.
  package mutating func write(lines: [UInt8], framing: Framing) -> Bool {
    guard framing == .contentLength else { return write(lines) }
    return write(Self.headerFramed(lines))
  }

  /// Each `\n`-terminated line of `lines` as `Content-Length: N\r\n\r\n` + the line's bytes.
  package static func headerFramed(_ lines: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(lines.count + 32)
    var start = 0
    while start < lines.count {
      let end = lines[start...].firstIndex(of: 0x0A) ?? lines.count
      out.append(contentsOf: "Content-Length: \(end - start)\r\n\r\n".utf8)
      out.append(contentsOf: lines[start..<end])
      start = end + 1
    }
    return out
  }
}
