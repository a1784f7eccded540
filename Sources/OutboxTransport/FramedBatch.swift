import OutboxSupport

/// The messages one read completed, in order, with the lines' bytes copied out of the read buffer
/// (a `FramedLine` is valid only inside the framer's callback), so the loop can look at all of
/// them before answering the first (`Server.handle(_:)` prepares saves on a second thread).
package struct FramedBatch {
  /// One framed message.
  package enum Entry {
    /// A line: its bytes in `bytes`.
    case line(Range<Int>)
    case tooLong(length: Int)
    case fault(HeaderFault)
  }

  package private(set) var bytes: [UInt8] = []
  package private(set) var entries: [Entry] = []

  package init() {}

  package var isEmpty: Bool { entries.isEmpty }

  /// Adds a message the framer completed.
  package mutating func append(_ framed: FramedLine) {
    switch framed {
    case .line(let line):
      let start = bytes.count
      bytes.appendBytes(line)
      entries.append(.line(start..<bytes.count))
    case .tooLong(let length): entries.append(.tooLong(length: length))
    case .fault(let fault): entries.append(.fault(fault))
    }
  }

  /// Empties the batch, keeping its memory unless one big read grew it past 4 MiB.
  package mutating func removeAll() {
    bytes.removeAll(keepingCapacity: bytes.capacity <= 1 << 22)
    entries.removeAll(keepingCapacity: entries.capacity <= 1 << 16)
  }

  /// Every message in order, as the framer gave it.
  package func forEach(_ body: (FramedLine) -> Void) {
    for index in entries.indices { withEntry(index, body) }
  }

  /// The message at `index` as the framer gave it.
  package func withEntry<R>(_ index: Int, _ body: (FramedLine) -> R) -> R {
    switch entries[index] {
    case .line(let range):
      return bytes.withUnsafeBufferPointer { body(.line(UnsafeBufferPointer(rebasing: $0[range]))) }
    case .tooLong(let length): return body(.tooLong(length: length))
    case .fault(let fault): return body(.fault(fault))
    }
  }
}
