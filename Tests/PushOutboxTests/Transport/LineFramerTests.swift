import Testing

@testable import OutboxCommandLine
@testable import OutboxDelivery
@testable import OutboxDomain
@testable import OutboxJSON
@testable import OutboxJSONRPC
@testable import OutboxServer
@testable import OutboxStore
@testable import OutboxSupport
@testable import OutboxTransport

/// What the framer produced, as plain values.
enum Framed: Equatable {
  case line(String)
  case tooLong(Int)
  /// A header fault's reason, and whether it was fatal.
  case fault(String, fatal: Bool)
}

func frame(_ chunks: [[UInt8]], max: Int = 1 << 20, finish: Bool = true) -> [Framed] {
  var framer = LineFramer(maxLineBytes: max)
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

@Suite struct LineFramerTests {
  static let input = Array("{\"a\":1}\r\n\n  \t\r\n\u{FEFF}[2]\nlast".utf8)
  static let expected: [Framed] = [.line("{\"a\":1}"), .line("[2]"), .line("last")]

  @Test func splitsLinesStripsCRAndBOMAndSkipsBlankLines() {
    #expect(frame([Self.input]) == Self.expected)
  }

  @Test func everySplitPointGivesTheSameLines() {
    for cut in 0...Self.input.count {
      let chunks = [Array(Self.input[..<cut]), Array(Self.input[cut...])]
      #expect(frame(chunks) == Self.expected, "split at byte \(cut)")
    }
  }

  @Test func oneByteAtATime() {
    #expect(frame(Self.input.map { [$0] }) == Self.expected)
  }

  @Test func finalLineWithoutNewlineNeedsEndOfInput() {
    #expect(frame([Array("a\nb".utf8)], finish: false) == [.line("a")])
  }

  @Test func bomOnlyLineIsNotBlank() {
    #expect(frame([[0xEF, 0xBB, 0xBF, 0x0A]]) == [.line("")])
  }

  @Test func overlongLineIsReportedOnceAndTheNextLineIsServed() {
    let long = [UInt8](repeating: UInt8(ascii: "x"), count: 100)
    let input = long + [0x0A] + Array("ok\n".utf8)
    #expect(frame([input], max: 10) == [.tooLong(100), .line("ok")])
    for cut in stride(from: 0, through: input.count, by: 7) {
      #expect(frame([Array(input[..<cut]), Array(input[cut...])], max: 10) == [.tooLong(100), .line("ok")])
    }
  }

  @Test func lineAtTheLimitIsAccepted() {
    #expect(frame([Array("1234567890\n".utf8)], max: 10) == [.line("1234567890")])
    #expect(frame([Array("12345678901\n".utf8)], max: 10) == [.tooLong(11)])
  }

  @Test func theLimitCountsMessageBytesNotCRorBOM() {
    let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
    let ten = Array("1234567890".utf8)
    #expect(frame([ten + [0x0D, 0x0A]], max: 10) == [.line("1234567890")])
    #expect(frame([bom + ten + [0x0A]], max: 10) == [.line("1234567890")])
    #expect(frame([bom + ten + [0x0D, 0x0A]], max: 10) == [.line("1234567890")])
    #expect(frame([bom + ten + [0x31, 0x0D, 0x0A]], max: 10) == [.tooLong(15)])
    let input = bom + ten + [0x0D, 0x0A] + bom + ten + [0x31, 0x0D, 0x0A] + Array("ok\r\n".utf8)
    for cut in 0...input.count {
      let chunks = [Array(input[..<cut]), Array(input[cut...])]
      #expect(frame(chunks, max: 10) == [.line("1234567890"), .tooLong(15), .line("ok")])
    }
    #expect(frame(input.map { [$0] }, max: 10) == [.line("1234567890"), .tooLong(15), .line("ok")])
  }

  @Test func memoryStaysBoundedWhileAnOverlongLineStreams() {
    var framer = LineFramer(maxLineBytes: 1024)
    let chunk = [UInt8](repeating: UInt8(ascii: "y"), count: 4096)
    var reports = 0
    for _ in 0..<1000 {
      framer.feed(chunk) { _ in reports += 1 }
      #expect(framer.bufferedByteCount <= 1024 + 4)
    }
    framer.feed([0x0A]) { framed in
      if case .tooLong(let n) = framed { #expect(n == 4096 * 1000) }
      reports += 1
    }
    #expect(reports == 1)
  }
}
