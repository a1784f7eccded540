import OutboxSupport

/// One framed input message (a line, or a Content-Length body), or the news that one was too long
/// and was dropped, or that a header was malformed.
package enum FramedLine {
  /// The line's bytes without `\n`, a trailing `\r` or a leading BOM. Valid only inside the callback.
  case line(UnsafeBufferPointer<UInt8>)
  /// A line longer than the limit; its bytes were discarded as they arrived. `length` counts
  /// every byte before the `\n`.
  case tooLong(length: Int)
  /// A Content-Length header the `HeaderFramer` could not read (never from `LineFramer`).
  case fault(HeaderFault)
}

/// Splits a byte stream into `\n`-terminated lines. Pure and synchronous: no I/O, so tests can
/// feed it one byte at a time.
///
/// - Blank lines (only spaces, tabs or `\r`) produce nothing.
/// - A line over `maxLineBytes` is reported once as `.tooLong`; memory stays bounded while it streams in.
///   The limit counts the message bytes only: a trailing `\r` and a leading BOM are framing, as the
///   protocol reads CRLF lines exactly like LF lines.
package struct LineFramer {
  package let maxLineBytes: Int
  /// Framing bytes a line may carry beyond the limit: a 3-byte BOM and a `\r`.
  private static let framingSlack = 4
  private var buffer: [UInt8] = []
  /// Length so far of an over-long line being discarded, or nil.
  private var discarding: Int? = nil

  package init(maxLineBytes: Int) {
    self.maxLineBytes = maxLineBytes
  }

  /// Bytes held for a partial line (for tests of the memory bound: at most `maxLineBytes + 4`).
  var bufferedByteCount: Int { buffer.count }

  /// Adds bytes and calls `body` for every complete line they finish.
  package mutating func feed(_ bytes: UnsafeBufferPointer<UInt8>, _ body: (FramedLine) -> Void) {
    guard let base = bytes.baseAddress else { return }
    var start = 0
    let end = bytes.count
    while start < end {
      let found = memchr(base + start, 0x0A, end - start)
      let stop = found.map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) - base } ?? end
      let piece = UnsafeBufferPointer(start: base + start, count: stop - start)
      if let length = discarding {
        discarding = length + piece.count
      } else if buffer.count + piece.count > maxLineBytes + Self.framingSlack {
        discarding = buffer.count + piece.count
        buffer.removeAll(keepingCapacity: false)
      } else if found != nil && buffer.isEmpty {
        emit(piece, body)  // whole line inside this chunk: no copy
      } else {
        buffer.append(contentsOf: piece)
      }
      guard found != nil else { return }
      finishLine(body)
      start = stop + 1
    }
  }

  package mutating func feed(_ bytes: [UInt8], _ body: (FramedLine) -> Void) {
    bytes.withUnsafeBufferPointer { feed($0, body) }
  }

  /// End of input: a final line without `\n` is still a line.
  package mutating func finish(_ body: (FramedLine) -> Void) {
    if discarding != nil || !buffer.isEmpty { finishLine(body) }
  }

  private mutating func finishLine(_ body: (FramedLine) -> Void) {
    if let length = discarding {
      discarding = nil
      body(.tooLong(length: length))
    } else if !buffer.isEmpty {
      buffer.withUnsafeBufferPointer { emit($0, body) }
      buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20)
    }
  }

  private func emit(_ raw: UnsafeBufferPointer<UInt8>, _ body: (FramedLine) -> Void) {
    var line = raw[...]
    if line.last == 0x0D { line = line.dropLast() }
    let hasBOM =
      line.count >= 3 && line[line.startIndex] == 0xEF && line[line.startIndex + 1] == 0xBB
      && line[line.startIndex + 2] == 0xBF
    if hasBOM { line = line.dropFirst(3) }
    if line.count > maxLineBytes { return body(.tooLong(length: raw.count)) }
    if !hasBOM && line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return }
    body(.line(UnsafeBufferPointer(rebasing: line)))
  }
}
