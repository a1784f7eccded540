/// What the server sent: one protocol message of the NATS client protocol (docs.nats.io,
/// reference/protocols/client: INFO, MSG, HMSG, PING, PONG, +OK, -ERR).
package enum NATSEvent: Sendable, Equatable {
  /// `INFO {…}`: the JSON text after the keyword.
  case info([UInt8])
  case message(NATSMessage)
  case ping
  case pong
  case ok
  /// `-ERR 'text'`: the text without its quotes.
  case error(String)
}

/// A `MSG` or `HMSG`: subject, subscription id, optional reply subject, headers and payload.
package struct NATSMessage: Sendable, Equatable {
  package var subject: String
  package var sid: String
  package var reply: String?
  /// The `NATS/1.0 503` status of an `HMSG` (503: no responders), nil when there is none.
  package var status: Int?
  package var headers: [NATSHeader] = []
  package var payload: [UInt8]

  package init(
    subject: String, sid: String, reply: String?, status: Int? = nil, headers: [NATSHeader] = [], payload: [UInt8]
  ) {
    self.subject = subject
    self.sid = sid
    self.reply = reply
    self.status = status
    self.headers = headers
    self.payload = payload
  }

  /// The first value of a header, by name compared without case.
  package func header(_ name: String) -> String? {
    headers.first { $0.name.lowercased() == name.lowercased() }?.value
  }
}

package struct NATSHeader: Sendable, Equatable {
  package var name: String
  package var value: String
  package init(_ name: String, _ value: String) {
    self.name = name
    self.value = value
  }
}

/// Why the bytes from the server are not the NATS protocol. Each malformed form has its own text.
package struct NATSProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
  package var description: String
  init(_ text: String) { description = "NATS protocol: " + text }
}

/// A streaming parser for what a NATS server sends: `append` any chunk of bytes (split anywhere),
/// then call `next()` until it answers nil (more bytes needed). A control line longer than
/// `maxControlLine` or a payload larger than `maxPayload` is an error, never a large allocation.
/// After an error the parser stays failed: the connection must be dropped.
package struct NATSParser: Sendable {
  package let maxControlLine: Int
  package let maxPayload: Int
  private var buffer: [UInt8] = []
  private var start = 0
  /// Where the search for the control line's `\n` resumes (so a long line is scanned once).
  private var scanned = 0
  /// The MSG/HMSG whose payload is awaited, with the bytes it needs (payload plus CRLF).
  private var awaiting: (head: Head, need: Int)?
  private var failure: NATSProtocolError?

  package init(maxControlLine: Int = 4096, maxPayload: Int = 64 << 20) {
    self.maxControlLine = maxControlLine
    self.maxPayload = maxPayload
  }

  /// Bytes buffered and not yet parsed.
  package var buffered: Int { buffer.count - start }

  package mutating func append<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
    if start > 0 && start >= buffer.count / 2 {
      buffer.removeSubrange(0..<start)
      scanned -= start
      start = 0
    }
    buffer.append(contentsOf: bytes)
  }

  /// The next complete message, nil when more bytes are needed.
  package mutating func next() throws(NATSProtocolError) -> NATSEvent? {
    if let failure { throw failure }
    do throws(NATSProtocolError) {
      if let awaiting { return try payload(awaiting.head, need: awaiting.need) }
      guard let line = try controlLine() else { return nil }
      return try control(line)
    } catch {
      failure = error
      throw error
    }
  }

  // MARK: - Control lines

  /// The bytes of the next line without its CRLF, or nil when it is not complete yet.
  private mutating func controlLine() throws(NATSProtocolError) -> ArraySlice<UInt8>? {
    var index = max(scanned, start)
    while index < buffer.count && buffer[index] != UInt8(ascii: "\n") { index += 1 }
    // Too long is judged the same however the bytes were split: the line's bytes before the LF,
    // less a CR at their end, are over the limit, whether the LF has arrived or not.
    guard index < buffer.count else {
      scanned = index
      if contentLength(upTo: buffer.count) > maxControlLine {
        throw NATSProtocolError("a control line is longer than \(maxControlLine) bytes")
      }
      return nil
    }
    guard contentLength(upTo: index) <= maxControlLine else {
      throw NATSProtocolError("a control line is longer than \(maxControlLine) bytes")
    }
    guard index > start, buffer[index - 1] == UInt8(ascii: "\r") else {
      throw NATSProtocolError("a control line ends with LF without CR")
    }
    let line = buffer[start..<(index - 1)]
    start = index + 1
    scanned = start
    return line
  }

  /// The bytes from `start` to `end`, less a CR at their end: the length the line's content has.
  private func contentLength(upTo end: Int) -> Int {
    end > start && buffer[end - 1] == UInt8(ascii: "\r") ? end - start - 1 : end - start
  }

  private mutating func control(_ line: ArraySlice<UInt8>) throws(NATSProtocolError) -> NATSEvent? {
    let words = Self.split(line)
    guard let first = words.first else { throw NATSProtocolError("an empty control line") }
    let op = String(decoding: first, as: UTF8.self).uppercased()
    switch op {
    case "PING", "PONG", "+OK":
      guard words.count == 1 else { throw NATSProtocolError("\(op) takes no arguments") }
      return op == "PING" ? .ping : op == "PONG" ? .pong : .ok
    case "INFO":
      guard words.count > 1, let brace = line.firstIndex(of: UInt8(ascii: "{")) else {
        throw NATSProtocolError("INFO without a JSON object")
      }
      return .info(Array(line[brace...]))
    case "-ERR": return .error(Self.errorText(line, after: first))
    case "MSG", "HMSG":
      let head = try Self.head(words.dropFirst(), headers: op == "HMSG", maxPayload: maxPayload)
      return try payload(head, need: head.total + 2)
    default:
      throw NATSProtocolError("unknown operation \(Self.quoted(first))")
    }
  }

  /// A MSG/HMSG line's parts: subject, sid, reply, header bytes (HMSG) and total bytes.
  struct Head: Sendable {
    var subject: String
    var sid: String
    var reply: String?
    var headerBytes: Int?
    var total: Int
  }

  private static func head(
    _ words: ArraySlice<ArraySlice<UInt8>>, headers: Bool, maxPayload: Int
  ) throws(NATSProtocolError) -> Head {
    let op = headers ? "HMSG" : "MSG"
    let counts = headers ? 2 : 1
    guard words.count == 2 + counts || words.count == 3 + counts else {
      throw NATSProtocolError("\(op) needs \(headers ? 4 : 3) or \(headers ? 5 : 4) arguments, not \(words.count)")
    }
    let all = Array(words)
    let sizes = try all.suffix(counts).map { (word) throws(NATSProtocolError) -> Int in
      guard let n = size(word) else {
        throw NATSProtocolError("\(op) has a size that is not a number: \(quoted(word))")
      }
      return n
    }
    let total = sizes[counts - 1]
    guard total <= maxPayload else {
      throw NATSProtocolError("\(op) announces \(total) bytes, over the limit of \(maxPayload)")
    }
    if headers {
      guard sizes[0] <= total else {
        throw NATSProtocolError("HMSG announces \(sizes[0]) header bytes in a message of \(total)")
      }
    }
    let reply = all.count == 3 + counts ? String(decoding: all[2], as: UTF8.self) : nil
    return Head(
      subject: String(decoding: all[0], as: UTF8.self), sid: String(decoding: all[1], as: UTF8.self), reply: reply,
      headerBytes: headers ? sizes[0] : nil, total: total)
  }

  // MARK: - Payloads

  private mutating func payload(_ head: Head, need: Int) throws(NATSProtocolError) -> NATSEvent? {
    guard buffer.count - start >= need else {
      awaiting = (head, need)
      return nil
    }
    awaiting = nil
    let end = start + head.total
    guard buffer[end] == UInt8(ascii: "\r"), buffer[end + 1] == UInt8(ascii: "\n") else {
      throw NATSProtocolError("the \(head.total)-byte payload on \(head.subject) is not followed by CRLF")
    }
    var message = NATSMessage(subject: head.subject, sid: head.sid, reply: head.reply, payload: [])
    var body = start
    if let headerBytes = head.headerBytes {
      try Self.headers(buffer[start..<(start + headerBytes)], into: &message)
      body += headerBytes
    }
    message.payload = Array(buffer[body..<end])
    start = end + 2
    scanned = start
    return .message(message)
  }

  /// `NATS/1.0[ status[ text]]\r\n(Name: value\r\n)*\r\n`.
  private static func headers(_ bytes: ArraySlice<UInt8>, into message: inout NATSMessage) throws(NATSProtocolError) {
    let version = Array("NATS/1.0".utf8)
    guard bytes.starts(with: version) else { throw NATSProtocolError("HMSG headers do not start with NATS/1.0") }
    guard bytes.count >= 4, bytes.suffix(4).elementsEqual([13, 10, 13, 10]) else {
      throw NATSProtocolError("HMSG headers do not end with an empty line")
    }
    var lines = lines(bytes.dropLast(4))
    let status = split(lines.removeFirst().dropFirst(version.count))
    if let code = status.first {
      guard code.count == 3, let number = size(code) else {
        throw NATSProtocolError("HMSG status \(quoted(code)) is not three digits")
      }
      message.status = number
    }
    for line in lines {
      guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex else {
        throw NATSProtocolError("HMSG header line \(quoted(line)) has no name and colon")
      }
      let name = String(decoding: line[..<colon], as: UTF8.self)
      let value = String(decoding: trimmed(line[(colon + 1)...]), as: UTF8.self)
      message.headers.append(NATSHeader(name, value))
    }
  }

  // MARK: - Helpers

  /// The lines of a header block split at CRLF.
  private static func lines(_ bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
    var out: [ArraySlice<UInt8>] = []
    var from = bytes.startIndex
    var index = bytes.startIndex
    while index < bytes.endIndex {
      if bytes[index] == 13 && index + 1 < bytes.endIndex && bytes[index + 1] == 10 {
        out.append(bytes[from..<index])
        index += 2
        from = index
      } else {
        index += 1
      }
    }
    out.append(bytes[from..<bytes.endIndex])
    return out
  }

  /// Words separated by spaces or tabs.
  static func split(_ line: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
    line.split(whereSeparator: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") })
  }

  /// A decimal size of at most 12 digits (no sign), or nil.
  static func size(_ word: ArraySlice<UInt8>) -> Int? {
    guard !word.isEmpty, word.count <= 12 else { return nil }
    var n = 0
    for byte in word {
      guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
      n = n * 10 + Int(byte - UInt8(ascii: "0"))
    }
    return n
  }

  /// The text after `-ERR`, blanks around it and one pair of quotes removed.
  private static func errorText(_ line: ArraySlice<UInt8>, after op: ArraySlice<UInt8>) -> String {
    var text = trimmed(line[op.endIndex...])
    let quote = UInt8(ascii: "'")
    if text.count >= 2, text.first == quote, text.last == quote { text = text.dropFirst().dropLast() }
    return String(decoding: text, as: UTF8.self)
  }

  /// `bytes` without the spaces and tabs around them: byte by byte, not by `Character`, for a
  /// blank or a quote followed by a combining mark is one `Character` that is neither.
  private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
    let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
    var text = bytes.drop(while: isBlank)
    while let last = text.last, isBlank(last) { text = text.dropLast() }
    return text
  }

  /// At most 40 bytes of a word, quoted, for an error text.
  static func quoted(_ word: ArraySlice<UInt8>) -> String {
    "\"" + String(decoding: word.prefix(40), as: UTF8.self) + (word.count > 40 ? "…" : "") + "\""
  }
}
