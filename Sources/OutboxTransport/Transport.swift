/// Where request bytes come from and reply bytes go: stdin and stdout (`StdioTransport`), or
/// memory (`MemoryTransport`, for running the real loop inside a process). The loop frames the
/// bytes itself; a transport only moves them.
package protocol Transport {
  /// Waits up to `timeoutMs` (-1: forever) for input or a stop, and hands over one chunk.
  mutating func next(timeoutMs: Int32, _ body: (UnsafeBufferPointer<UInt8>) -> Void) -> TransportEvent
  /// True when more input can be had without waiting.
  func inputIsWaiting() -> Bool
  /// Writes all of `bytes`; false when the output is gone (the loop then stops).
  mutating func write(_ bytes: [UInt8]) -> Bool
}

/// What waiting for input produced.
package enum TransportEvent: Equatable {
  case data(Int)
  case endOfInput
  case signal
  case timeout
}

/// Why the run loop stopped.
package enum StopReason: Sendable, Equatable {
  case endOfInput
  case signal
  case outputClosed
  /// A Content-Length header was malformed beyond resynchronising (`HeaderFault.fatal`).
  case framingLost
  /// The `exit` notification arrived.
  case exitRequested
}
