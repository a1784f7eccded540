import OutboxCommandLine
import OutboxDelivery
import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxServer
import OutboxStore
import OutboxSupport
import OutboxTransport

/// The replies a stream must get, worked out independently of `LineFramer`, `Envelope` and
/// `Server`, from the protocol's rules (Protocol/README.md, JSON-RPC 2.0):
///
/// - lines end at `\n`; a trailing `\r` and a leading BOM are not part of the message; a line of only
///   spaces, tabs and `\r` (and no BOM) is nothing; a message longer than `--max-line-bytes` gets one
///   error with id null;
/// - a line that is not JSON (or too deep), an empty batch, or a batch over `--max-batch` gets one
///   error with id null;
/// - each request object gets one reply with its id (null when the id is missing or unusable), except a
///   valid notification (no `id`) and a response object (no `method`, has `result` or `error`), which
///   get none; a batch's replies come as one array line, or no line when none is due;
/// - in Content-Length framing (`HeaderModel`), each body is a message as a line is (a leading BOM
///   dropped, a blank body a parse error); a header fault gets one error with id null, and after one
///   that leaves the next message's start unknown nothing more is answered.
struct Expected {
  enum Line: Equatable {
    case single([UInt8])
    case batch([[UInt8]])
  }

  private(set) var lines: [Line] = []
  let headers: Bool
  static let null = Array("null".utf8)

  init(_ setup: Setup) {
    headers = setup.headers
    if headers {
      for message in HeaderModel.messages(Array(setup.stream), maxBody: setup.maxLineBytes) {
        guard case .body(let body) = message else {
          lines.append(.single(Self.null))
          continue
        }
        add(body.starts(with: [0xEF, 0xBB, 0xBF]) ? body.dropFirst(3) : body, setup)
      }
      return
    }
    var start = setup.stream.startIndex
    let end = setup.stream.endIndex
    while start < end {
      let stop = setup.stream[start...].firstIndex(of: 0x0A) ?? end
      add(message(setup.stream[start..<stop]), setup)
      start = stop + 1
    }
  }

  /// The message bytes of a raw line (nil: a blank line, which is nothing).
  private func message(_ raw: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
    var line = raw
    if line.last == 0x0D { line = line.dropLast() }
    if line.starts(with: [0xEF, 0xBB, 0xBF]) { return line.dropFirst(3) }
    return line.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D } ? nil : line
  }

  private mutating func add(_ message: ArraySlice<UInt8>?, _ setup: Setup) {
    guard let message else { return }
    guard message.count <= setup.maxLineBytes, let value = try? JSONReader.parse(Array(message)) else {
      lines.append(.single(Self.null))
      return
    }
    guard case .array(let members) = value else {
      if let id = Self.reply(to: value) { lines.append(.single(id)) }
      return
    }
    if members.isEmpty || members.count > setup.maxBatch {
      lines.append(.single(Self.null))
      return
    }
    let ids = members.compactMap(Self.reply(to:))
    if !ids.isEmpty { lines.append(.batch(ids)) }
  }

  /// The id (as JSON text) of the reply one batch member or single request gets, or nil for none.
  static func reply(to value: JSONValue) -> [UInt8]? {
    guard case .object(let members) = value else { return null }
    var seen = Set<[UInt8]>()
    for member in members where !seen.insert(Array(member.key.utf8)).inserted { return null }
    func field(_ name: String) -> JSONValue? { members.first { $0.key.utf8.elementsEqual(name.utf8) }?.value }
    var id: [UInt8]? = nil
    if let value = field("id") {
      switch value {
      case .null, .int, .number, .string: id = value.jsonBytes
      default: return null
      }
    }
    if field("method") == nil && (field("result") != nil || field("error") != nil) { return nil }
    guard case .string(let version)? = field("jsonrpc"), version.utf8.elementsEqual("2.0".utf8),
      case .string? = field("method")
    else { return id ?? null }
    switch field("params") {
    case nil, .array?, .object?: return id
    default: return id ?? null
    }
  }
}

/// Checks the output bytes: one JSON reply line per expected line, each well formed, ids in order.
func check(_ output: [UInt8], expected: Expected, input: [UInt8]) {
  let output = expected.headers ? unframed(output, input) : output
  guard output.isEmpty || output.last == 0x0A else { fail("the output does not end with a newline", input) }
  var got: [Expected.Line] = []
  for line in output.split(separator: 0x0A, omittingEmptySubsequences: false).dropLast() {
    let value: JSONValue
    do { value = try JSONReader.parse(Array(line)) } catch {
      fail("an output line is not JSON (\(error.reason)): \(String(decoding: line, as: UTF8.self))", input)
    }
    if case .array(let replies) = value {
      guard !replies.isEmpty else { fail("an empty batch reply", input) }
      got.append(.batch(replies.map { replyID($0, input) }))
    } else {
      got.append(.single(replyID(value, input)))
    }
  }
  guard got == expected.lines else {
    fail("replies \(describe(got)) where \(describe(expected.lines)) were due", input)
  }
}

/// The id of a well-formed response object, as JSON text.
private func replyID(_ value: JSONValue, _ input: [UInt8]) -> [UInt8] {
  guard case .object(let members) = value else { fail("a reply that is not an object", input) }
  let keys = members.map(\.key).sorted()
  guard keys == ["error", "id", "jsonrpc"] || keys == ["id", "jsonrpc", "result"],
    value["jsonrpc"] == .string("2.0"), let id = value["id"]
  else { fail("a malformed reply: \(value.jsonText)", input) }
  if let error = value["error"] {
    guard case .int? = error["code"], case .string? = error["message"] else {
      fail("a malformed error: \(value.jsonText)", input)
    }
  }
  return id.jsonBytes
}

private func describe(_ lines: [Expected.Line]) -> String {
  lines.map { line in
    switch line {
    case .single(let id): String(decoding: id, as: UTF8.self)
    case .batch(let ids): "[" + ids.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ",") + "]"
    }
  }.joined(separator: " ")
}

/// Content-Length replies as lines: each must be exactly `Content-Length: N\r\n\r\n` and N bytes
/// holding no newline.
private func unframed(_ output: [UInt8], _ input: [UInt8]) -> [UInt8] {
  var lines: [UInt8] = []
  var rest = output[...]
  let prefix = Array("Content-Length: ".utf8)
  while !rest.isEmpty {
    guard rest.starts(with: prefix), let end = rest.firstRange(of: [0x0D, 0x0A, 0x0D, 0x0A]),
      let length = Int(String(decoding: rest[(rest.startIndex + prefix.count)..<end.lowerBound], as: UTF8.self)),
      rest.count - (end.upperBound - rest.startIndex) >= length
    else {
      fail("a reply is not one Content-Length message: \(String(decoding: rest.prefix(80), as: UTF8.self))", input)
    }
    let body = rest[end.upperBound..<(end.upperBound + length)]
    guard !body.contains(0x0A) else { fail("a Content-Length reply holds a newline", input) }
    lines += body + [0x0A]
    rest = rest[(end.upperBound + length)...]
  }
  return lines
}
