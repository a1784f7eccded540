import Foundation
import Testing

@testable import OutboxTransport

func frameHeaders(_ chunks: [[UInt8]], max: Int = 1 << 20, finish: Bool = true) -> [Framed] {
  var framer = HeaderFramer(maxLineBytes: max)
  var out: [Framed] = []
  let collect: (FramedLine) -> Void = { framed in
    switch framed {
    case .line(let bytes): out.append(.line(String(decoding: bytes, as: UTF8.self)))
    case .tooLong(let n): out.append(.tooLong(n))
    case .fault(let fault): out.append(.fault(fault.reason, fatal: fault.fatal))
    }
  }
  for chunk in chunks { framer.feed(chunk, collect) }
  if finish { framer.finish(collect) }
  return out
}

/// A plain reference for the LSP base protocol as `HeaderFramer` reads it, working on the whole input
/// at once: header lines up to an empty one, then exactly Content-Length bytes.
func referenceHeaderFrames(_ input: [UInt8], max: Int) -> [Framed] {
  var out: [Framed] = []
  var i = 0
  let tokenBytes = Set(Array("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8))
  while i < input.count {
    var length: Int? = nil
    var charset: String? = nil
    var headerBytes = 0
    while true {  // one header line
      let newline = input[i...].firstIndex(of: 0x0A)
      let lineEnd = newline ?? input.count
      if headerBytes + (lineEnd - i) > HeaderFramer.maxHeaderBytes {
        return out + [.fault("header_too_long", fatal: true)]
      }
      guard let newline else { return out + [.fault("truncated_header", fatal: false)] }
      let line = input[i..<newline]
      headerBytes += line.count + 1
      i = newline + 1
      guard line.last == 0x0D else { return out + [.fault("bad_line_ending", fatal: true)] }
      let text = line.dropLast()
      if text.isEmpty { break }
      guard let colon = text.firstIndex(of: 0x3A), colon > text.startIndex,
        text[..<colon].allSatisfy(tokenBytes.contains)
      else { return out + [.fault("bad_header", fatal: true)] }
      let name = String(decoding: text[..<colon], as: UTF8.self).lowercased()
      let value = String(decoding: text[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: [" ", "\t"])
      if name == "content-length" {
        guard length == nil, !value.isEmpty, value.count <= 18, value.allSatisfy(\.isASCII),
          let n = Int(value), !value.hasPrefix("+"), !value.hasPrefix("-")
        else { return out + [.fault("bad_content_length", fatal: true)] }
        length = n
      } else if name == "content-type" {
        for part in value.split(separator: ";").dropFirst() {
          let pair = part.split(separator: "=", maxSplits: 1).map {
            $0.trimmingCharacters(in: [" ", "\t"]).lowercased()
          }
          if pair.count == 2 && pair[0] == "charset" { charset = pair[1].trimmingCharacters(in: ["\""]) }
        }
      }
    }
    guard let length else { return out + [.fault("missing_content_length", fatal: true)] }
    guard input.count - i >= length else { return out + [.fault("truncated_body", fatal: false)] }
    var body = input[i..<(i + length)]
    i += length
    if let charset, charset != "utf-8" && charset != "utf8" {
      out.append(.fault("unsupported_charset", fatal: false))
    } else if length > max {
      out.append(.tooLong(length))
    } else {
      if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
      out.append(.line(String(decoding: body, as: UTF8.self)))
    }
  }
  return out
}

@Suite struct HeaderFramerTests {
  static func message(_ body: String, headers: String = "Content-Length: %d\r\n") -> [UInt8] {
    let bytes = Array(body.utf8)
    return Array((headers.replacingOccurrences(of: "%d", with: "\(bytes.count)") + "\r\n").utf8) + bytes
  }

  static let input =
    message("{\"a\":1}")
    + message("[2]", headers: "content-type: application/vscode-jsonrpc; charset=utf8\r\ncontent-LENGTH:  %d \r\n")
    + message("\u{FEFF}{}", headers: "X-Other: 1\r\nContent-Length: %d\r\n") + message("")
    + message("{}", headers: "Content-Length: %d\r\nContent-Type: text/json; charset=\"latin1\"\r\n") + message("last")
  static let expected: [Framed] = [
    .line("{\"a\":1}"), .line("[2]"), .line("{}"), .line(""), .fault("unsupported_charset", fatal: false),
    .line("last"),
  ]

  @Test func readsBodiesOfTheLSPBaseProtocol() {
    #expect(frameHeaders([Self.input]) == Self.expected)
    #expect(referenceHeaderFrames(Self.input, max: 1 << 20) == Self.expected)
  }

  @Test func everySplitPointAndOneByteAtATimeGiveTheSameMessages() {
    for cut in 0...Self.input.count {
      let chunks = [Array(Self.input[..<cut]), Array(Self.input[cut...])]
      #expect(frameHeaders(chunks) == Self.expected, "split at byte \(cut)")
    }
    #expect(frameHeaders(Self.input.map { [$0] }) == Self.expected)
  }

  @Test func faultsAreNamedAndTheFatalOnesStopEverything() {
    let cases: [(String, Framed)] = [
      ("\r\n{}", .fault("missing_content_length", fatal: true)),
      ("Content-Type: application/json\r\n\r\n{}", .fault("missing_content_length", fatal: true)),
      ("Content-Length: 2x\r\n\r\n{}", .fault("bad_content_length", fatal: true)),
      ("Content-Length: -2\r\n\r\n{}", .fault("bad_content_length", fatal: true)),
      ("Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", .fault("bad_content_length", fatal: true)),
      ("Content-Length: 2\n\n{}", .fault("bad_line_ending", fatal: true)),
      ("{\"jsonrpc\":\"2.0\"}\r\n", .fault("bad_header", fatal: true)),
      ("Content Length: 2\r\n\r\n{}", .fault("bad_header", fatal: true)),
      ("X-Pad: " + String(repeating: "a", count: 9000), .fault("header_too_long", fatal: true)),
      ("Content-Length: 2\r\n", .fault("truncated_header", fatal: false)),
      ("Content-Length: 20\r\n\r\n{}", .fault("truncated_body", fatal: false)),
    ]
    for (text, fault) in cases {
      guard case .fault(_, let fatal) = fault else { continue }
      let bytes = Array(text.utf8) + (fatal ? Self.message("{}") : [])  // nothing after a fatal fault is framed
      let want = [fault]
      #expect(frameHeaders([bytes]) == want, "\(text.prefix(40))")
      #expect(referenceHeaderFrames(bytes, max: 1 << 20) == want, "reference: \(text.prefix(40))")
    }
  }

  @Test func aBodyOverTheLimitIsSkippedAndTheNextIsServed() {
    let input = Self.message(String(repeating: "x", count: 100)) + Self.message("ok")
    #expect(frameHeaders([input], max: 64) == [.tooLong(100), .line("ok")])
    #expect(frameHeaders(input.map { [$0] }, max: 64) == [.tooLong(100), .line("ok")])
    var framer = HeaderFramer(maxLineBytes: 64)
    framer.feed(Array(Self.message(String(repeating: "x", count: 100_000)).dropLast(1))) { _ in }
    #expect(framer.bufferedByteCount == 0)  // a skipped body is never held
  }

  /// Random streams of messages, good and bad, cut into random chunks, against the reference.
  @Test(arguments: 0..<300 as Range<UInt64>)
  func randomStreamsMatchTheReference(seed: UInt64) {
    var rng = SeededGenerator(seed: seed)
    var input: [UInt8] = []
    for _ in 0..<Int.random(in: 1...6, using: &rng) {
      input += Self.randomMessage(&rng)
    }
    let max = [8, 64, 1 << 20].randomElement(using: &rng)!
    var chunks: [[UInt8]] = []
    var at = 0
    while at < input.count {
      let n = min(input.count - at, Int.random(in: 1...40, using: &rng))
      chunks.append(Array(input[at..<(at + n)]))
      at += n
    }
    let want = referenceHeaderFrames(input, max: max)
    #expect(frameHeaders(chunks, max: max) == want, "seed \(seed)")
  }

  static func randomMessage(_ rng: inout SeededGenerator) -> [UInt8] {
    let bodies = ["{}", "", "\u{FEFF}[1]", "{\"k\":\"é\"}", String(repeating: "z", count: 70)]
    let body = Array(bodies.randomElement(using: &rng)!.utf8)
    let names = ["Content-Length", "content-length", "CONTENT-LENGTH"]
    var lines = ["\(names.randomElement(using: &rng)!):\([" ", "", "\t"].randomElement(using: &rng)!)\(body.count)"]
    if Bool.random(using: &rng) {
      let charset = ["utf-8", "UTF8", "\"utf-8\"", "latin1"].randomElement(using: &rng)!
      lines.insert(
        "Content-Type: application/vscode-jsonrpc; charset=\(charset)", at: Int.random(in: 0...1, using: &rng))
    }
    if Int.random(in: 0..<4, using: &rng) == 0 { lines.append("X-Extra: yes") }
    var text = lines.joined(separator: "\r\n") + "\r\n\r\n"
    switch Int.random(in: 0..<40, using: &rng) {  // now and then, a fault
    case 0: text = text.replacingOccurrences(of: "\(body.count)", with: "\(body.count + 3)")
    case 1: text = text.replacingOccurrences(of: "\r\n\r\n", with: "\n\n")
    case 2: text = "X-Bad header\r\n" + text
    case 3: text = "Content-Length: 1\r\n" + text
    case 4: text = text.replacingOccurrences(of: "\(body.count)\r", with: "\(body.count)k\r")
    case 5: return Array(text.utf8) + body.dropLast()
    default: break
    }
    return Array(text.utf8) + body
  }
}

@Suite struct MessageFramerTests {
  static func decide(_ text: String, ended: Bool = false) -> Framing? { Framing.decide(Array(text.utf8), ended: ended) }

  @Test func autoDecidesFromTheFirstBytes() {
    #expect(Self.decide("{") == .newline)
    #expect(Self.decide("\u{FEFF} \r\n\t[") == .newline)
    #expect(Self.decide("Content-Length:") == .contentLength)
    #expect(Self.decide("\u{FEFF}\r\ncontent-type: x") == .contentLength)
    #expect(Self.decide("CONTENT-length: 2") == .contentLength)
    #expect(Self.decide("Content-Len") == nil)  // cannot tell yet
    #expect(Self.decide("Content-Len", ended: true) == .newline)
    #expect(Self.decide("Contents") == .newline)
    #expect(Self.decide("  ") == nil)
    #expect(Self.decide("x") == .newline)
    #expect(Framing.decide([0xEF, 0xBB], ended: false) == nil)  // a BOM cut between two reads
    #expect(Framing.decide([0xEF, 0xBB], ended: true) == .newline)
  }

  @Test func autoFramesEitherKindAtEverySplitPoint() {
    let headers = HeaderFramerTests.message("{\"a\":1}") + HeaderFramerTests.message("[2]")
    let lines = Array("\u{FEFF}{\"a\":1}\r\n[2]\n".utf8)
    for input in [headers, [0xEF, 0xBB, 0xBF] + headers, lines] {
      for cut in 0...input.count {
        var framer = MessageFramer(.auto, maxLineBytes: 1 << 20)
        var out: [String] = []
        for chunk in [Array(input[..<cut]), Array(input[cut...])] {
          framer.feed(chunk) { if case .line(let b) = $0 { out.append(String(decoding: b, as: UTF8.self)) } }
        }
        framer.finish { if case .line(let b) = $0 { out.append(String(decoding: b, as: UTF8.self)) } }
        #expect(out == ["{\"a\":1}", "[2]"], "split at \(cut)")
        #expect(framer.framing == (input == lines ? .newline : .contentLength))
      }
    }
  }

  @Test func repliesAreFramedAsTheInputWas() {
    var transport = MemoryTransport()
    _ = transport.write(lines: Array("{\"a\":1}\n[]\n".utf8), framing: .contentLength)
    #expect(transport.output == Array("Content-Length: 7\r\n\r\n{\"a\":1}Content-Length: 2\r\n\r\n[]".utf8))
    _ = transport.takeOutput()
    _ = transport.write(lines: Array("{}\n".utf8), framing: .auto)
    #expect(transport.output == Array("{}\n".utf8))
  }
}
