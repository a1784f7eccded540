import OutboxJSON
import OutboxSupport

/// Splits a byte stream framed by the LSP base protocol into message bodies: header lines ending in
/// `\r\n` (`Content-Length` required, `Content-Type` optional and only UTF-8, other names ignored,
/// names case-insensitive), an empty line, then exactly `Content-Length` bytes of body. Pure and
/// synchronous like `LineFramer`: tests feed it one byte at a time.
///
/// - A body over `maxLineBytes` is skipped as it arrives and reported once as `.tooLong`.
/// - A fault that leaves the body's end known (an unsupported charset) skips that body and goes on.
///   A fault that does not (no or a bad `Content-Length`, a malformed or over-long header) is fatal:
///   it is reported once and every later byte is ignored. The framer never guesses a boundary.
/// - A leading UTF-8 BOM in a body is dropped, as `LineFramer` drops one at the start of a line.
package struct HeaderFramer {
  package let maxLineBytes: Int
  /// Longest header block accepted (all its lines, with their `\r\n`).
  package static let maxHeaderBytes = 8192
  private var state = State.header
  /// The header line being read.
  private var line: [UInt8] = []
  /// Header bytes of this message so far.
  private var headerBytes = 0
  private var contentLength: Int? = nil
  private var charsetFault: HeaderFault? = nil
  private var body: [UInt8] = []

  private enum State {
    case header
    /// `remaining` bytes of body to come; `skip` when they are dropped, not kept.
    case body(length: Int, remaining: Int, skip: HeaderFault?)
    case broken
  }

  package init(maxLineBytes: Int) {
    self.maxLineBytes = maxLineBytes
  }

  /// True after a fatal fault: nothing more will be framed.
  package var isBroken: Bool {
    if case .broken = state { return true }
    return false
  }

  /// Bytes held for a partial header or body (for tests of the memory bound).
  var bufferedByteCount: Int { line.count + body.count }

  /// Adds bytes and calls `body` for every message, oversize notice and fault they complete.
  package mutating func feed(_ bytes: UnsafeBufferPointer<UInt8>, _ emit: (FramedLine) -> Void) {
    guard let base = bytes.baseAddress else { return }
    var start = 0
    while start < bytes.count {
      switch state {
      case .broken: return
      case .header: start = readHeader(base, start, bytes.count, emit)
      case .body(let length, let remaining, let skip):
        let take = min(remaining, bytes.count - start)
        let piece = UnsafeBufferPointer(start: base + start, count: take)
        start += take
        if take == remaining && body.isEmpty && skip == nil {
          state = .header
          deliver(piece, length: length, emit)  // whole body inside this chunk: no copy
          continue
        }
        if skip == nil { body.append(contentsOf: piece) }
        state = .body(length: length, remaining: remaining - take, skip: skip)
        if take == remaining { finishBody(length: length, skip: skip, emit) }
      }
    }
  }

  package mutating func feed(_ bytes: [UInt8], _ emit: (FramedLine) -> Void) {
    bytes.withUnsafeBufferPointer { feed($0, emit) }
  }

  /// End of input: a message cut short is reported (not fatal: the stream has ended anyway).
  package mutating func finish(_ emit: (FramedLine) -> Void) {
    switch state {
    case .broken: return
    case .header:
      guard headerBytes + line.count > 0 else { return }
      emit(.fault(HeaderFault("truncated_header", "input ended inside a message header", fatal: false)))
    case .body(let length, let remaining, _):
      let facts = [
        JSONMember("contentLength", .int(Int64(length))), JSONMember("received", .int(Int64(length - remaining))),
      ]
      emit(
        .fault(
          HeaderFault(
            "truncated_body", "input ended \(remaining) bytes before the end of a \(length)-byte body", fatal: false,
            facts)
        ))
    }
    state = .broken
  }

  // MARK: - Header

  /// Reads header bytes from `start` up to one line end; returns where it stopped.
  private mutating func readHeader(
    _ base: UnsafePointer<UInt8>, _ start: Int, _ end: Int, _ emit: (FramedLine) -> Void
  ) -> Int {
    let found = memchr(base + start, 0x0A, end - start)
    let stop = found.map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) - base } ?? end
    line.append(contentsOf: UnsafeBufferPointer(start: base + start, count: stop - start))
    if headerBytes + line.count > Self.maxHeaderBytes {
      fail("header_too_long", "the header is over \(Self.maxHeaderBytes) bytes", emit, [limit(Self.maxHeaderBytes)])
      return end
    }
    guard found != nil else { return end }
    headerBytes += line.count + 1
    guard line.last == 0x0D else {
      fail("bad_line_ending", "a header line ends in \\n without \\r", emit)
      return end
    }
    line.removeLast()
    if line.isEmpty {
      endHeader(emit)
    } else if let fault = headerField() {
      fail(fault.reason, fault.detail, emit)
    }
    line.removeAll(keepingCapacity: true)
    return stop + 1
  }

  /// Reads `line` as `name: value`; a fault when it is not one or its value is refused.
  private mutating func headerField() -> HeaderFault? {
    guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0, line[..<colon].allSatisfy(Self.isTokenByte)
    else {
      return HeaderFault("bad_header", "a header line is not `Name: value`", fatal: true)
    }
    let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
    let value = Self.trimmed(line[(colon + 1)...])
    switch name {
    case "content-length":
      guard contentLength == nil else {
        return HeaderFault("bad_content_length", "Content-Length is given twice", fatal: true)
      }
      guard !value.isEmpty, value.count <= 18, value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
        let shown = String(decoding: value.prefix(40), as: UTF8.self)
        return HeaderFault("bad_content_length", "Content-Length is not a decimal byte count: \(shown)", fatal: true)
      }
      contentLength = value.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    case "content-type":
      if let charset = Self.charset(value), !["utf-8", "utf8"].contains(charset) {
        charsetFault = HeaderFault(
          "unsupported_charset", "only utf-8 is read, not \(charset)", fatal: false,
          [JSONMember("charset", .string(charset))])
      }
    default: break  // other headers carry nothing for us
    }
    return nil
  }

  /// The empty line: the body starts, or the header had no length.
  private mutating func endHeader(_ emit: (FramedLine) -> Void) {
    guard let length = contentLength else {
      return fail("missing_content_length", "a message header has no Content-Length", emit)
    }
    let skip = charsetFault ?? (length > maxLineBytes ? HeaderFault("too_long", "", fatal: false) : nil)
    contentLength = nil
    charsetFault = nil
    headerBytes = 0
    state = .body(length: length, remaining: length, skip: skip)
    if length == 0 { finishBody(length: 0, skip: skip, emit) }
  }

  private mutating func fail(
    _ reason: String, _ detail: String, _ emit: (FramedLine) -> Void, _ facts: [JSONMember] = []
  ) {
    state = .broken
    line = []
    body = []
    emit(.fault(HeaderFault(reason, detail, fatal: true, facts)))
  }

  // MARK: - Body

  private mutating func finishBody(length: Int, skip: HeaderFault?, _ emit: (FramedLine) -> Void) {
    state = .header
    if let skip {
      if skip.reason == "too_long" { emit(.tooLong(length: length)) } else { emit(.fault(skip)) }
      return
    }
    body.withUnsafeBufferPointer { deliver($0, length: length, emit) }
    body.removeAll(keepingCapacity: body.capacity <= 1 << 20)
  }

  private func deliver(_ raw: UnsafeBufferPointer<UInt8>, length: Int, _ emit: (FramedLine) -> Void) {
    let hasBOM = raw.count >= 3 && raw[0] == 0xEF && raw[1] == 0xBB && raw[2] == 0xBF
    emit(.line(hasBOM ? UnsafeBufferPointer(rebasing: raw[3...]) : raw))
  }

  // MARK: - Text

  /// RFC 9110 token characters, which header names are made of.
  private static func isTokenByte(_ b: UInt8) -> Bool {
    switch b {
    case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
    default: Array("!#$%&'*+-.^_`|~".utf8).contains(b)
    }
  }

  private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
    let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
    guard let first = bytes.firstIndex(where: { !isSpace($0) }) else { return [] }
    let last = bytes.lastIndex(where: { !isSpace($0) })!
    return bytes[first...last]
  }

  /// The `charset` parameter of a `Content-Type` value, lowercased and unquoted, if it has one.
  static func charset(_ value: ArraySlice<UInt8>) -> String? {
    for parameter in String(decoding: value, as: UTF8.self).split(separator: ";").dropFirst() {
      let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces() }
      guard pair.count == 2, pair[0].lowercased() == "charset" else { continue }
      var name = pair[1].lowercased()
      if name.count >= 2 && name.hasPrefix("\"") && name.hasSuffix("\"") { name = String(name.dropFirst().dropLast()) }
      return name
    }
    return nil
  }

  private func limit(_ n: Int) -> JSONMember { JSONMember("limit", .int(Int64(n))) }
}

extension Substring {
  fileprivate func trimmingSpaces() -> String {
    String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
  }
}
