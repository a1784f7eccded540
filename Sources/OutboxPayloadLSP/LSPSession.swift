import OutboxSupport
package import OutboxTransport

/// `push-outbox lsp`'s loop: Content-Length messages in, `LSPServer` in between, messages out.
///
/// Coalescing: each turn reads everything stdin holds (up to `maxTurnBytes`), handles it all, and
/// only then publishes diagnostics, for each changed document at its latest version. While more
/// input is already waiting, publishing waits too (up to `maxDeferral` seconds), so a burst of
/// edits costs one check per document, and no superseded version is ever published.
package struct LSPSession<T: Transport> {
  package var transport: T
  package let server: LSPServer
  private var framer: HeaderFramer
  /// Bytes read in one turn before handling what they hold.
  static var maxTurnBytes: Int { 4 << 20 }
  /// Longest time diagnostics wait for a quiet moment while input keeps coming.
  static var maxDeferral: Double { 0.05 }

  package init(transport: T, server: LSPServer, maxMessageBytes: Int) {
    self.transport = transport
    self.server = server
    framer = HeaderFramer(maxLineBytes: maxMessageBytes)
  }

  /// Runs until `exit`, the end of input or a lost frame; returns the process's exit code.
  package mutating func run() -> Int32 {
    var deferredSince: Double? = nil
    while true {
      var ended = false
      var read = 0
      var wait: Int32 = deferredSince == nil ? -1 : 10
      repeat {
        var chunk: [UInt8] = []
        let event = transport.next(timeoutMs: wait) { chunk.append(contentsOf: $0) }
        wait = 0
        read += chunk.count
        chunk.withUnsafeBufferPointer { feed($0) }
        if event == .endOfInput || event == .signal { ended = true }
      } while !ended && read < Self.maxTurnBytes && server.exitCode == nil && transport.inputIsWaiting()
      if server.exitCode == nil && !framer.isBroken && !ended && transport.inputIsWaiting() {
        let now = Clock.monotonicSeconds()
        if deferredSince == nil { deferredSince = now }
        if now - deferredSince! < Self.maxDeferral {
          guard flush() else { return 1 }
          continue
        }
      }
      deferredSince = nil
      server.publishPending()
      guard flush() else { return 1 }
      if let code = server.exitCode { return code }
      if ended || framer.isBroken { return server.exitCode ?? 1 }
    }
  }

  private mutating func feed(_ bytes: UnsafeBufferPointer<UInt8>) {
    let server = self.server
    let limit = framer.maxLineBytes
    framer.feed(bytes) { framed in
      switch framed {
      case .line(let body):
        if server.exitCode == nil { server.handle(body) }
      case .tooLong(let length):
        server.refuse("a message of \(length) bytes is over the limit of \(limit); it is skipped")
      case .fault(let fault):
        server.refuse(fault.reason + ": " + fault.detail)
      }
    }
  }

  /// Writes what the server queued, each message with its Content-Length header.
  private mutating func flush() -> Bool {
    let messages = server.takeOutbox()
    guard !messages.isEmpty else { return true }
    var out: [UInt8] = []
    for body in messages {
      out.append(contentsOf: "Content-Length: \(body.count)\r\n\r\n".utf8)
      out.append(contentsOf: body)
    }
    return transport.write(out)
  }
}
