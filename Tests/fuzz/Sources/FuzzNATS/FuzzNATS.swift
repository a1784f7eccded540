// Fuzz target: the NATS client protocol parser (`NATSParser`, issue 20), fed what a server could send.
// Bytes 0-3 are chunk sizes (0: the rest), then the stream. What must hold:
//
// - nothing traps (a malformed form is a `NATSProtocolError`, a size over the limits too);
// - the chunk split changes nothing: the stream parsed in one piece gives the same events and the
//   same error as the stream fed in the input's chunk sizes;
// - every event, written back in the protocol's plain form (`wire` below, written here from the
//   protocol's text, not from the parser), parses to the same event;
// - what the client believes of the server's word (issue 40): each message read as a publish ack
//   into stream `S` counts as stored only when its JSON names `S` and a positive `seq` (and it is
//   not a 503); each INFO passes the `max_payload` check only when the field is absent or a whole
//   number in 1...64 MiB.
import FuzzSupport
import OutboxJSON
import OutboxNATS

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNATS(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
  let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
  guard input.count >= 4 else { return 0 }
  let sizes = input.prefix(4).map { Int($0) }
  let stream = Array(input.dropFirst(4))
  let whole = parse([stream[...]])
  let chunked = parse(chunks(stream, sizes))
  guard whole.events == chunked.events, whole.error == chunked.error else {
    fuzzFailure(
      "FuzzNATS",
      "chunks \(sizes): \(chunked.events.count) events, error \(String(describing: chunked.error));"
        + " whole: \(whole.events.count) events, error \(String(describing: whole.error))", input, asBytes: true)
  }
  for event in whole.events {
    checkBelief(event, input)
    // Written back with a larger line limit: invalid UTF-8 in a subject or -ERR text was read as
    // U+FFFD, three bytes for one, so the written line can be longer than the one read.
    let again = parse([wire(event)[...]], maxControlLine: 4096)
    guard again.events == [event], again.error == nil else {
      fuzzFailure(
        "FuzzNATS", "\(event) written back parses as \(again.events), \(String(describing: again.error))", input,
        asBytes: true)
    }
  }
  return 0
}

/// The client's belief of one event against what the protocol's text allows.
func checkBelief(_ event: NATSEvent, _ input: [UInt8]) {
  switch event {
  case .message(let m):
    let value = try? JSONReader.parse(m.payload, maxDepth: 16)
    let named = value?["stream"]?.stringValue
    let seq = value?["seq"]?.intValue
    let stored: Bool
    if case .stored(let got, _) = PublishAck.parse(m, stream: "S") {
      stored = true
      guard got == UInt64(clamping: seq ?? 0) else { fuzzFailure("FuzzNATS", "ack seq \(got)", input, asBytes: true) }
    } else {
      stored = false
    }
    let allowed = m.status != 503 && value?["error"] == nil && named == "S" && (seq ?? 0) > 0
    guard stored == allowed else {
      fuzzFailure(
        "FuzzNATS", "publish ack counted stored: \(stored), the protocol allows \(allowed)", input, asBytes: true)
    }
  case .info(let json):
    guard let info = try? JSONReader.parse(json, maxDepth: 16) else { return }
    let field = info["max_payload"]
    let fine = field == nil || (field?.intValue).map { $0 >= 1 && $0 <= 64 << 20 } == true
    let passed = (try? NATSConnection.checkMaxPayload(info)) != nil
    guard passed == fine else {
      fuzzFailure("FuzzNATS", "max_payload check passed: \(passed), should: \(fine)", input, asBytes: true)
    }
  default: return
  }
}

func chunks(_ stream: [UInt8], _ sizes: [Int]) -> [ArraySlice<UInt8>] {
  var out: [ArraySlice<UInt8>] = []
  var offset = 0
  var turn = 0
  while offset < stream.count {
    let size = sizes[turn % sizes.count]
    let n = size == 0 ? stream.count - offset : min(size, stream.count - offset)
    out.append(stream[offset..<(offset + n)])
    offset += n
    turn += 1
  }
  return out
}

func parse(
  _ pieces: [ArraySlice<UInt8>], maxControlLine: Int = 256
) -> (
  events: [NATSEvent], error: NATSProtocolError?
) {
  var parser = NATSParser(maxControlLine: maxControlLine, maxPayload: 4096)
  var events: [NATSEvent] = []
  for piece in pieces {
    parser.append(piece)
    do {
      while let event = try parser.next() { events.append(event) }
    } catch { return (events, error) }
  }
  return (events, nil)
}

/// The plain wire form of an event (docs.nats.io reference/protocols/client).
func wire(_ event: NATSEvent) -> [UInt8] {
  switch event {
  case .info(let json): return Array("INFO ".utf8) + json + [13, 10]
  case .ping: return Array("PING\r\n".utf8)
  case .pong: return Array("PONG\r\n".utf8)
  case .ok: return Array("+OK\r\n".utf8)
  case .error(let text): return Array("-ERR '".utf8) + Array(text.utf8) + Array("'\r\n".utf8)
  case .message(let m):
    let reply = m.reply.map { " " + $0 } ?? ""
    guard m.status != nil || !m.headers.isEmpty else {
      return Array("MSG \(m.subject) \(m.sid)\(reply) \(m.payload.count)\r\n".utf8) + m.payload + [13, 10]
    }
    var block = Array(("NATS/1.0" + (m.status.map { " " + String(1000 + $0).dropFirst() } ?? "") + "\r\n").utf8)
    for h in m.headers { block += Array(h.name.utf8) + Array(": ".utf8) + Array(h.value.utf8) + [13, 10] }
    block += [13, 10]
    return Array("HMSG \(m.subject) \(m.sid)\(reply) \(block.count) \(block.count + m.payload.count)\r\n".utf8) + block
      + m.payload + [13, 10]
  }
}

@_cdecl("FuzzNATS_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
  runFuzzer(argc, argv, fuzzNATS)
}
