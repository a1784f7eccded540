import OutboxPayloadLSP
import OutboxServer
import OutboxSupport
import OutboxTransport

/// `push-outbox lsp`: a language server for push payloads (`.apns` files, JSON that looks like a
/// payload) on stdin/stdout with Content-Length framing. It opens no store. The engine is
/// `OutboxPayloadLSP`; the rules are `OutboxDomain`'s `PayloadRules`, shared with `parsePayload`.
///
/// Exit codes, as LSP says: 0 after `shutdown` then `exit`, 1 for `exit` without `shutdown`, the end
/// of input or a lost frame.
package enum LSPCommand {
  package struct Options: Sendable {
    /// Documents over this many bytes get one diagnostic and are not read (default 1 MiB).
    package var maxDocumentBytes = 1 << 20

    package init() {}
  }

  static func run(_ options: Options, _ config: Configuration) -> ExitCode {
    var settings = LSPServer.Settings()
    settings.maxDocumentBytes = options.maxDocumentBytes
    settings.maxTotalBytes = max(64 << 20, options.maxDocumentBytes * 4)
    let wakeup = Signals.install()
    var session = LSPSession(
      transport: StdioTransport(wakeup: wakeup), server: LSPServer(settings: settings),
      maxMessageBytes: config.maxLineBytes)
    return session.run() == 0 ? .success : .failure
  }
}
