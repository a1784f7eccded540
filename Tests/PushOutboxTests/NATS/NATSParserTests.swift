import Testing

@testable import OutboxNATS

/// The NATS protocol parser against a plain reference: random server messages (seeded) are written
/// as wire bytes, fed in random chunk splits, and must come back exactly, in order.
@Suite struct NATSParserTests {
  /// The reference: what each event looks like on the wire, written the plain way.
  static func wire(_ event: NATSEvent) -> [UInt8] {
    switch event {
    case .info(let json): return Array("INFO ".utf8) + json + [13, 10]
    case .ping: return Array("PING\r\n".utf8)
    case .pong: return Array("PONG\r\n".utf8)
    case .ok: return Array("+OK\r\n".utf8)
    case .error(let text): return Array("-ERR '\(text)'\r\n".utf8)
    case .message(let m):
      let reply = m.reply.map { " " + $0 } ?? ""
      guard m.status != nil || !m.headers.isEmpty else {
        return Array("MSG \(m.subject) \(m.sid)\(reply) \(m.payload.count)\r\n".utf8) + m.payload + [13, 10]
      }
      var block = "NATS/1.0" + (m.status.map { " \($0) Status" } ?? "") + "\r\n"
      for h in m.headers { block += "\(h.name): \(h.value)\r\n" }
      block += "\r\n"
      let head = Array(block.utf8)
      return Array("HMSG \(m.subject) \(m.sid)\(reply) \(head.count) \(head.count + m.payload.count)\r\n".utf8)
        + head + m.payload + [13, 10]
    }
  }

  static func randomEvent(_ rng: inout SeededGenerator) -> NATSEvent {
    func word(_ rng: inout SeededGenerator) -> String {
      String((0..<Int.random(in: 1...12, using: &rng)).map { _ in "abcXYZ019._$>*-".randomElement(using: &rng)! })
    }
    switch Int.random(in: 0..<7, using: &rng) {
    case 0: return .ping
    case 1: return .pong
    case 2: return .ok
    case 3: return .error("Permissions Violation for " + word(&rng))
    case 4: return .info(Array(#"{"server_id":"\#(word(&rng))","headers":true,"max_payload":1048576}"#.utf8))
    default:
      // Payloads hold any bytes, CR and LF included, and sometimes look like protocol lines.
      var payload = (0..<Int.random(in: 0...300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
      if Bool.random(using: &rng) { payload += Array("\r\nPING\r\nMSG a 1 3\r\n".utf8) }
      var m = NATSMessage(
        subject: word(&rng), sid: String(Int.random(in: 1...99, using: &rng)),
        reply: Bool.random(using: &rng) ? "_INBOX." + word(&rng) : nil, payload: payload)
      if Bool.random(using: &rng) {
        m.status = Bool.random(using: &rng) ? 503 : nil
        m.headers = (0..<Int.random(in: 0...3, using: &rng)).map { _ in NATSHeader("Nats-" + word(&rng), word(&rng)) }
      }
      return .message(m)
    }
  }

  /// Feeds `bytes` in random pieces; returns the events and the first error.
  static func parse(
    _ bytes: [UInt8], _ rng: inout SeededGenerator, maxPayload: Int = 1 << 20
  ) -> (
    [NATSEvent], NATSProtocolError?
  ) {
    var parser = NATSParser(maxControlLine: 4096, maxPayload: maxPayload)
    var events: [NATSEvent] = []
    var offset = 0
    while offset < bytes.count {
      let n = min(bytes.count - offset, Int.random(in: 1...64, using: &rng) * (Bool.random(using: &rng) ? 1 : 13))
      parser.append(bytes[offset..<(offset + n)])
      offset += n
      do {
        while let event = try parser.next() { events.append(event) }
      } catch { return (events, error) }
    }
    return (events, nil)
  }

  @Test(arguments: 1...40) func randomChunkSplitsGiveTheReferenceEvents(seed: UInt64) {
    var rng = SeededGenerator(seed: seed)
    let events = (0..<Int.random(in: 1...60, using: &rng)).map { _ in Self.randomEvent(&rng) }
    let bytes = events.flatMap(Self.wire)
    let (parsed, error) = Self.parse(bytes, &rng)
    #expect(error == nil)
    #expect(parsed == events, "seed \(seed)")
  }

  @Test(arguments: [
    ("FOO bar\r\n", "unknown operation \"FOO\""),
    ("PING\n", "ends with LF without CR"),
    ("\r\n", "an empty control line"),
    ("PING extra\r\n", "PING takes no arguments"),
    ("INFO\r\n", "INFO without a JSON object"),
    ("MSG a 1\r\n", "MSG needs 3 or 4 arguments, not 2"),
    ("MSG a 1 b c d\r\n", "MSG needs 3 or 4 arguments, not 5"),
    ("MSG a 1 x\r\n", "MSG has a size that is not a number: \"x\""),
    ("MSG a 1 -3\r\n", "MSG has a size that is not a number: \"-3\""),
    ("MSG a 1 99999999\r\n", "MSG announces 99999999 bytes, over the limit of 1048576"),
    ("MSG a 1 3\r\nabcXY", "the 3-byte payload on a is not followed by CRLF"),
    ("HMSG a 1 20 10\r\n", "HMSG announces 20 header bytes in a message of 10"),
    ("HMSG a 1 4 4\r\nabcd\r\n", "HMSG headers do not start with NATS/1.0"),
    ("HMSG a 1 10 10\r\nNATS/1.0\r\n\r\n", "HMSG headers do not end with an empty line"),
    ("HMSG a 1 16 16\r\nNATS/1.0 5x3\r\n\r\n\r\n", "HMSG status \"5x3\" is not three digits"),
    ("HMSG a 1 21 21\r\nNATS/1.0\r\nnocolon\r\n\r\n\r\n", "has no name and colon"),
    ("HMSG a 1 21 21\r\nNATS/1.0\r\n: value\r\n\r\n\r\n", "has no name and colon"),
  ])
  func eachMalformedFormHasItsOwnError(input: String, expected: String) {
    var parser = NATSParser(maxControlLine: 4096, maxPayload: 1 << 20)
    parser.append(Array(input.utf8))
    var error: NATSProtocolError?
    do { while try parser.next() != nil {} } catch let thrown { error = thrown }
    #expect(error?.description.contains(expected) == true, "\(input.debugDescription): \(String(describing: error))")
    // A failed parser stays failed.
    #expect(throws: NATSProtocolError.self) { try parser.next() }
  }

  @Test func anOverlongControlLineIsRefusedBeforeItsEnd() {
    var parser = NATSParser(maxControlLine: 64, maxPayload: 1024)
    parser.append(Array(repeating: UInt8(ascii: "A"), count: 65))
    #expect(throws: NATSProtocolError("a control line is longer than 64 bytes")) { try parser.next() }
  }

  @Test func statusAndHeadersAreRead() throws {
    var parser = NATSParser()
    parser.append(Array("HMSG _INBOX.x.1 1 24 24\r\nNATS/1.0 503\r\nA: b  \r\n\r\n\r\n".utf8))
    guard case .message(let m)? = try parser.next() else { Issue.record("no message"); return }
    #expect(m.status == 503 && m.header("a") == "b" && m.payload.isEmpty)
  }

  @Test(arguments: 1...20) func randomBytesNeverTrap(seed: UInt64) {
    var rng = SeededGenerator(seed: seed)
    let pieces = ["MSG ", "HMSG ", "PING", "\r\n", " ", "1", "12", "NATS/1.0", "a", ":", "\n", "INFO {}", "-ERR x"]
    let bytes = (0..<200).flatMap { _ in Array(pieces.randomElement(using: &rng)!.utf8) }
    _ = Self.parse(bytes, &rng, maxPayload: 64)
  }
}
