import Foundation
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

/// The contract in `Protocol/`: the method list, `rpc.discover`, and every golden transcript
/// replayed against the real binary.
@Suite struct ProtocolTests {
  static let document: JSONValue = {
    let bytes = (try? [UInt8](Data(contentsOf: Paths.root.appendingPathComponent("Protocol/openrpc.json")))) ?? []
    return (try? JSONReader.parse(bytes, maxDepth: 1000)) ?? .null
  }()

  @Test func methodListEqualsOpenRPC() {
    let documented = Self.document["methods"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
    #expect(Set(documented) == Set(MethodTable.standard.names))
    #expect(documented.count == MethodTable.standard.names.count)
  }

  @Test func discoverReturnsTheDocumentExactly() throws {
    let reply = try InProcessServer().request("rpc.discover")
    let same = reply["result"] == Self.document
    #expect(same)
  }

  static let transcripts: [String] = {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: Paths.transcripts.path)) ?? []
    return names.filter { $0.hasSuffix(".txt") }.sorted()
  }()

  @Test func transcriptsExist() {
    #expect(Self.transcripts.count >= 4)
  }

  @Test(arguments: transcripts)
  func transcriptReplaysAgainstTheBinary(name: String) throws {
    let transcript = try Transcript(contentsOf: Paths.transcripts.appendingPathComponent(name))
    let run = try runBinary(Transcript.baseArguments + transcript.arguments, input: transcript.input)
    #expect(run.status == 0, "\(run.stderr)")
    let bodies = transcript.headerFraming ? try headerBodies(run.stdout) : lines(run.stdout)
    let actual = try bodies.map { try JSONReader.parse($0, maxDepth: 1000) }
    #expect(
      actual.count == transcript.expected.count,
      "\(name): \(actual.count) replies, expected \(transcript.expected.count)")
    for (n, (got, want)) in zip(actual, transcript.expected).enumerated() {
      #expect(got == want, "\(name) reply \(n + 1): got \(got.jsonText)")
    }
  }
}

/// A golden session in the one transcript format (Protocol/README.md, "Transcript format"): `>` lines
/// sent verbatim, `<` lines expected back (compared as parsed JSON), `#` comments, `#! args:` extra
/// command-line arguments, `#! framing: content-length` (each `>` text is sent as one LSP message and
/// the replies are read as such), blank lines. Any other line is an error.
struct Transcript {
  static let baseArguments = ["--memory", "--fixed-clock", "2026-01-01T00:00:00.000Z", "--id-seed", "1"]
  var sends: [[UInt8]] = []
  /// The bytes sent: each `>` text with `\n`, or under its Content-Length header.
  var input: [UInt8] {
    headerFraming
      ? sends.flatMap { Array("Content-Length: \($0.count)\r\n\r\n".utf8) + $0 } : sends.flatMap { $0 + [0x0A] }
  }
  var expected: [JSONValue] = []
  var arguments: [String] = []
  /// `#! framing: content-length`: messages with LSP headers instead of lines.
  var headerFraming = false

  struct Malformed: Error, CustomStringConvertible {
    var description: String
  }

  init(contentsOf url: URL) throws {
    try self.init(bytes: [UInt8](Data(contentsOf: url)), name: url.lastPathComponent)
  }

  /// Splits on `\n` bytes only (a Swift `Character` split would join `\r\n`).
  init(bytes: [UInt8], name: String = "transcript") throws {
    for (index, raw) in bytes.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
      let line = Array(raw)
      let text = String(decoding: line, as: UTF8.self)
      let fail = { (why: String) in Malformed(description: "\(name):\(index + 1): \(why): \(text.prefix(60))") }
      if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
      if text.hasPrefix("#!") {
        let directive = text.dropFirst(2).split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let name = directive.first?.trimmingCharacters(in: .whitespaces)
        let value = directive.count == 2 ? directive[1].trimmingCharacters(in: .whitespaces) : ""
        if name == "framing" && ["newline", "content-length"].contains(value) {
          headerFraming = value == "content-length"
          continue
        }
        guard directive.count == 2, name == "args" else {
          throw fail("unknown directive (only '#! args:', '#! framing:')")
        }
        arguments += directive[1].split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
      } else if text.hasPrefix("#") {
        continue
      } else if text == ">" || text.hasPrefix("> ") {
        sends.append(Array(line.dropFirst(2)))
      } else if text.hasPrefix("< ") {
        guard let value = try? JSONReader.parse(Array(line.dropFirst(2)), maxDepth: 1000) else {
          throw fail("expected reply is not JSON")
        }
        expected.append(value)
      } else {
        throw fail("a line must be blank or start with '> ', '< ', '#'")
      }
    }
  }
}

/// The cases every transcript parser must agree on (Protocol/tests/transcript-format.json).
@Suite struct TranscriptFormatTests {
  static let cases: JSONValue = {
    let url = Paths.root.appendingPathComponent("Protocol/tests/transcript-format.json")
    return (try? JSONReader.parse([UInt8](Data(contentsOf: url)), maxDepth: 100)) ?? .null
  }()

  @Test func aMalformedLineIsAnError() throws {
    let malformed = try #require(Self.cases["malformed"]?.arrayValue)
    #expect(!malformed.isEmpty)
    for line in malformed.compactMap(\.stringValue) {
      #expect(throws: Transcript.Malformed.self, "\(line)") { try Transcript(bytes: Array("> {}\n\(line)\n".utf8)) }
    }
  }

  @Test func aWellFormedTranscript() throws {
    let good = try #require(Self.cases["good"])
    let transcript = try Transcript(bytes: Array(try #require(good["text"]?.stringValue).utf8))
    #expect(transcript.arguments == good["args"]?.arrayValue?.compactMap(\.stringValue))
    let sends = try #require(good["sends"]?.arrayValue).compactMap(\.stringValue)
    #expect(transcript.input == Array(sends.map { $0 + "\n" }.joined().utf8))
    #expect(transcript.expected == good["expected"]?.arrayValue)
  }
}

/// The bodies of a stream of `Content-Length: N\r\n\r\n` messages.
func headerBodies(_ out: [UInt8]) throws -> [String] {
  var bodies: [String] = []
  var rest = out[...]
  let prefix = Array("Content-Length: ".utf8)
  while !rest.isEmpty {
    guard rest.starts(with: prefix), let end = rest.firstRange(of: [0x0D, 0x0A, 0x0D, 0x0A]),
      let length = Int(String(decoding: rest[(rest.startIndex + prefix.count)..<end.lowerBound], as: UTF8.self)),
      rest.count - (end.upperBound - rest.startIndex) >= length
    else { throw Transcript.Malformed(description: "not a Content-Length message: \(Array(rest.prefix(60)))") }
    bodies.append(String(decoding: rest[end.upperBound..<(end.upperBound + length)], as: UTF8.self))
    rest = rest[(end.upperBound + length)...]
  }
  return bodies
}
