package import OutboxDelivery
package import OutboxDomain
package import OutboxJSON
package import OutboxJSONRPC
package import OutboxStore
package import OutboxSupport
package import OutboxTransport

/// The process's one loop: read a chunk, handle its lines in order, write all responses once,
/// and keep snapshots going. Stops on end of input, SIGTERM/SIGINT or a closed stdout.
package struct RunLoop {
  private let server: Server
  private var transport: StdioTransport
  private var framer: LineFramer

  package init(server: Server, transport: StdioTransport) {
    self.server = server
    self.transport = transport
    self.framer = LineFramer(maxLineBytes: server.service.config.maxLineBytes)
  }

  /// Serves until input ends or a signal arrives, then takes the final snapshot.
  package mutating func run() -> StopReason {
    let reason = serve()
    let service = server.service
    service.delivery?.finish()
    service.disk?.finish(service.store, now: service.clock.now())
    server.service.log.info("stopped: \(reason)")
    return reason
  }

  private mutating func serve() -> StopReason {
    var busy = transport.inputIsWaiting()  // requests wait: background delivery starts sends less often
    while true {
      let service = server.service
      service.disk?.tick(service.store, now: service.clock.now())
      service.delivery?.tick(busy: busy)
      let timeout = Self.sooner(
        service.disk?.pollTimeoutMs(service.store) ?? -1, service.delivery?.pollTimeoutMs() ?? -1)
      let server = self.server
      let event = transport.next(timeoutMs: timeout) { chunk in
        framer.feed(chunk) { Self.dispatch($0, server) }
      }
      switch event {
      case .data:
        // Keep answering while more input is already waiting; write before we would block.
        busy = server.burstBytes >= 1 << 16 || transport.inputIsWaiting()
        if server.burstBytes < 1 << 16 && busy { continue }
        if !flush() { return .outputClosed }
      case .timeout:
        busy = false
      case .signal:
        return flush() ? .signal : .outputClosed
      case .endOfInput:
        framer.finish { Self.dispatch($0, server) }
        return flush() ? .endOfInput : .outputClosed
      }
    }
  }

  /// The shorter of two poll timeouts (-1: none).
  private static func sooner(_ a: Int32, _ b: Int32) -> Int32 { a < 0 ? b : b < 0 ? a : min(a, b) }

  private static func dispatch(_ framed: FramedLine, _ server: Server) {
    switch framed {
    case .line(let bytes): server.handle(line: bytes)
    case .tooLong(let length): server.handleOversizedLine(length: length)
    }
  }

  /// Commits the burst's journal records, then writes its responses. False when stdout is gone.
  private func flush() -> Bool {
    server.render()
    guard !server.output.isEmpty else { return true }
    defer { server.output.removeAll(keepingCapacity: server.output.capacity <= 1 << 22) }
    return transport.write(server.output)
  }
}
