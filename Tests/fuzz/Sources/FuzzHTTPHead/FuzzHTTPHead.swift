// Fuzz target: the metrics listener's request-head parser (`HTTPRequestHead.parse`, issue 40 item 11),
// fed what a client could send. Byte 0 picks the head limit (255: the listener's 8 KiB, else
// 16 + 32 × byte), bytes 1-2 are chunk sizes (0: the rest), then the stream. What must hold:
//
// - nothing traps;
// - the split changes nothing: reading the stream chunk by chunk, the first answer that is not
//   `incomplete` is the answer to the whole stream (the bytes after a head are never read);
// - a head ends with LF within the limit, parses the same from its own bytes alone, and every
//   shorter prefix of it is `incomplete`; its method is A-Z and its target starts with "/";
// - a head written back in plain form (request line, one Accept line, blank line) parses to itself.
import FuzzSupport
import OutboxServer

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPHead(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
  let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
  guard input.count >= 3 else { return 0 }
  let limit = input[0] == 255 ? 8192 : 16 + 32 * Int(input[0])
  let stream = Array(input.dropFirst(3))
  let whole = HTTPRequestHead.parse(stream, limit: limit)
  let chunked = firstAnswer(stream, sizes: [Int(input[1]), Int(input[2])], limit: limit)
  guard chunked == whole else {
    fuzzFailure("FuzzHTTPHead", "in chunks \(chunked), whole \(whole)", input, asBytes: true)
  }
  if case .head(let head, let length) = whole { check(head, length: length, stream, limit: limit, input) }
  return 0
}

/// The first answer that is not `incomplete` while the stream arrives in chunks of `sizes`.
func firstAnswer(_ stream: [UInt8], sizes: [Int], limit: Int) -> HTTPRequestHead.Parse {
  var received: [UInt8] = []
  var turn = 0
  while received.count < stream.count {
    let size = sizes[turn % sizes.count]
    let n = size == 0 ? stream.count - received.count : min(size, stream.count - received.count)
    received += stream[received.count..<(received.count + n)]
    turn += 1
    let parsed = HTTPRequestHead.parse(received, limit: limit)
    if parsed != .incomplete { return parsed }
  }
  return .incomplete
}

func check(_ head: HTTPRequestHead, length: Int, _ stream: [UInt8], limit: Int, _ input: [UInt8]) {
  guard length <= limit, stream[length - 1] == 10,
    HTTPRequestHead.parse(Array(stream[..<length]), limit: limit) == .head(head, length: length),
    HTTPRequestHead.parse(Array(stream[..<(length - 1)]), limit: limit) == .incomplete
  else { fuzzFailure("FuzzHTTPHead", "head of \(length) bytes is not its own", input, asBytes: true) }
  guard !head.method.isEmpty, head.method.utf8.allSatisfy({ $0 >= 65 && $0 <= 90 }), head.target.hasPrefix("/")
  else { fuzzFailure("FuzzHTTPHead", "accepted \(head)", input, asBytes: true) }
  let plain = "\(head.method) \(head.target) HTTP/1.1\r\n" + (head.accept.map { "Accept:\($0)\r\n" } ?? "") + "\r\n"
  let again = HTTPRequestHead.parse(Array(plain.utf8), limit: 1 << 20)
  guard case .head(head, _) = again else {
    fuzzFailure("FuzzHTTPHead", "\(head) written back parses as \(again)", input, asBytes: true)
  }
}

@_cdecl("FuzzHTTPHead_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
  runFuzzer(argc, argv, fuzzHTTPHead)
}
