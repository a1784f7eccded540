import OutboxSupport
package import OutboxTransport

/// The process's one loop: read a chunk, handle its lines in order, write all responses once, and
/// do the periodic work (`Service.tick`). Stops on end of input, a stopping signal or a closed
/// output. Generic over its transport: stdin/stdout in the executable, memory in process.
package struct RequestLoop<T: Transport> {
  package let server: Server
  package private(set) var transport: T
  private var framer: MessageFramer
  /// The messages of the last read, handled together (`Server.handle(_:)`), and the batch before,
  /// which may still wait to be answered (`Server.answerPostedBatch`): the two take turns.
  private var batch = FramedBatch()
  private var spare = FramedBatch()
  /// Requests are waiting: background delivery starts sends less often.
  private var busy = false
  /// A write found the output gone while a batch was being handled.
  private var outputLost = false

  package init(server: Server, transport: T) {
    self.server = server
    self.transport = transport
    self.framer = MessageFramer(server.service.config.framing, maxLineBytes: server.service.config.maxLineBytes)
  }

  /// Serves until input ends or a signal arrives, then takes the final snapshot.
  package mutating func run() -> StopReason {
    busy = transport.inputIsWaiting()
    var reason: StopReason? = nil
    while reason == nil {
      reason = step(timeoutMs: nil)
    }
    server.service.finish()
    server.service.log.info("stopped: \(reason!)")
    return reason!
  }

  /// Handles everything the transport holds now and writes the replies; nil while it could go on
  /// (the transport had nothing more), else why it stopped. For callers in process.
  package mutating func runUntilIdle() -> StopReason? {
    while true {
      let before = transport.inputIsWaiting()
      if let reason = step(timeoutMs: nil) { return reason }  // a memory transport never waits
      if !before && !transport.inputIsWaiting() { return nil }
    }
  }

  /// Queues input for a loop over a memory transport.
  package mutating func push(_ bytes: [UInt8]) where T == MemoryTransport { transport.push(bytes) }

  /// The wait a loop over a memory transport asked for last.
  package func lastTimeoutMs() -> Int32? where T == MemoryTransport { transport.lastTimeoutMs }

  /// Takes the replies a loop over a memory transport wrote.
  package mutating func takeOutput() -> [UInt8] where T == MemoryTransport { transport.takeOutput() }

  /// One turn: the periodic work, one wait for input, and a write when the burst is done. The wait
  /// is at most `timeoutMs`, or (nil) until the periodic work has something to do, as it stands
  /// after this turn's work: requests that work started are waited on, not slept through.
  private mutating func step(timeoutMs: Int32?) -> StopReason? {
    // The last batch, answered by the last flush, may have held `exit`.
    if let requested = stopRequested() { return stop(requested) }
    server.service.tick(now: server.service.clock.now(), busy: busy)
    let server = self.server
    // A long call's reply, or a handed-over burst's, waits: no wait for input then.
    let waiting = !server.service.longCalls.output.isEmpty || server.repliesWaitForWrite
    let timeoutMs = waiting ? 0 : timeoutMs ?? server.service.pollTimeoutMs()
    let event = read(timeoutMs: timeoutMs)
    if let requested = stopRequested() { return stop(requested) }
    switch event {
    case .data:
      if outputLost { return .outputClosed }
      // Keep answering while more input is already waiting; write before we would block.
      busy = server.burstBytes >= 1 << 16 || transport.inputIsWaiting()
      if server.burstBytes < 1 << 16 && busy { return nil }
      // With more input waiting, the end of the batch is answered with the next one.
      return flush(finishing: !transport.inputIsWaiting()) ? nil : .outputClosed
    case .timeout:
      busy = false
      return flush() ? nil : .outputClosed
    case .signal:
      return stop(.signal)
    case .endOfInput:
      framer.finish { batch.append($0) }
      handleBatch()
      return stop(.endOfInput)
    }
  }

  /// The last flush before stopping for `reason`. That flush may answer the batch posted to the
  /// second thread, or the framer's last message at end of input: an `exit` there is the reason, as
  /// with one thread when `exit` came in an earlier read.
  private mutating func stop(_ reason: StopReason) -> StopReason {
    guard flush() && finishLongCalls() else { return .outputClosed }
    if server.service.lifecycle.exitCode != nil { return .exitRequested }
    // With --deliver, what is pending still goes at the end of input, for up to --drain-timeout.
    if reason == .endOfInput { server.service.drainDelivery() }
    return reason
  }

  /// Waits for input and handles what one read brings: as one batch with a second thread
  /// (`Server.handle(_:)`), else message by message as the framer completes them.
  private mutating func read(timeoutMs: Int32) -> TransportEvent {
    let server = self.server
    guard server.handlesBatches else {
      return transport.next(timeoutMs: timeoutMs) { chunk in framer.feed(chunk) { server.handle(framed: $0) } }
    }
    // A local batch: the callback runs per message, and reaching this generic struct's own field
    // from it would look up the struct's type metadata each time.
    var read = FramedBatch()
    swap(&read, &batch)
    let event = transport.next(timeoutMs: timeoutMs) { chunk in
      framer.feed(chunk) { read.append($0) }
    }
    swap(&read, &batch)
    handleBatch()
    return event
  }

  /// Before stopping: long calls run to their end and are answered (a stopping signal ends a
  /// delivery pass at once). False when the output is gone.
  private mutating func finishLongCalls() -> Bool {
    let service = server.service
    while !service.longCalls.isEmpty {
      service.tick(now: service.clock.now())
      if service.longCalls.output.isEmpty { service.longCalls.wait(service) }
      guard flush() else { return false }
    }
    return true
  }

  private mutating func handleBatch() {
    guard !batch.isEmpty else { return }
    server.handle(batch) { writeWhilePreparing() }
    swap(&batch, &spare)
    batch.removeAll()
  }

  /// Writes the replies the burst holds once they fill the usual write, while the second thread
  /// prepares the batch just read (the batch before is answered after).
  private mutating func writeWhilePreparing() {
    guard server.burstBytes >= 1 << 16, !outputLost else { return }
    if !flush(finishing: false) { outputLost = true }
  }

  /// A stop the input asked for: `exit`, or a header fault that leaves no next message to find.
  private func stopRequested() -> StopReason? {
    if server.service.lifecycle.exitCode != nil { return .exitRequested }
    return framer.isBroken ? .framingLost : nil
  }

  /// Commits the burst's journal records, then writes its responses. False when the output is gone.
  /// `finishing`: the last batch is answered first (else it may wait for the next batch), and every
  /// reply goes out; else a burst of saves may be handed over while its records are written, and its
  /// replies go out with the next flush (`Server.render(handOver:)`).
  private mutating func flush(finishing: Bool = true) -> Bool {
    if finishing { server.answerPostedBatch() }
    server.render(handOver: !finishing)
    guard !server.output.isEmpty else { return true }
    defer { server.clearOutput() }
    return transport.write(lines: server.output, framing: framer.framing)
  }
}
