/// A transport in memory: input is what was pushed, output collects what the loop wrote. With no
/// input left it reports a timeout (the loop is idle) until `close()` makes it the end of input.
package struct MemoryTransport: Transport {
  private var input: [[UInt8]] = []
  private var closed = false
  /// Everything written so far.
  package var output: [UInt8] = []
  /// Bytes handed over per `next` at most, to exercise framing across chunks (default 64 KiB).
  package var chunkSize: Int
  /// The wait the loop asked for at its last `next` (it never waits here): what a real transport
  /// would have slept, at most, with no input.
  package private(set) var lastTimeoutMs: Int32?

  package init(chunkSize: Int = 1 << 16) {
    self.chunkSize = max(1, chunkSize)
  }

  /// Queues bytes for the loop to read.
  package mutating func push(_ bytes: [UInt8]) {
    guard !bytes.isEmpty else { return }
    input.append(bytes)
  }

  /// No more input after what is queued.
  package mutating func close() { closed = true }

  /// Takes what was written so far.
  package mutating func takeOutput() -> [UInt8] {
    defer { output.removeAll(keepingCapacity: true) }
    return output
  }

  package mutating func next(timeoutMs: Int32, _ body: (UnsafeBufferPointer<UInt8>) -> Void) -> TransportEvent {
    lastTimeoutMs = timeoutMs
    guard !input.isEmpty else { return closed ? .endOfInput : .timeout }
    var chunk = input.removeFirst()
    if chunk.count > chunkSize {
      input.insert(Array(chunk[chunkSize...]), at: 0)
      chunk.removeSubrange(chunkSize...)
    }
    chunk.withUnsafeBufferPointer(body)
    return .data(chunk.count)
  }

  package func inputIsWaiting() -> Bool { !input.isEmpty }

  package mutating func write(_ bytes: [UInt8]) -> Bool {
    output.append(contentsOf: bytes)
    return true
  }
}
