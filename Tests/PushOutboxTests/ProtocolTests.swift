import Foundation
import Testing

@testable import PushOutbox

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
    let actual = try lines(run.stdout).map { try JSONReader.parse($0, maxDepth: 1000) }
    #expect(actual.count == transcript.expected.count, "\(name): \(actual.count) replies, expected \(transcript.expected.count)")
    for (n, (got, want)) in zip(actual, transcript.expected).enumerated() {
      #expect(got == want, "\(name) reply \(n + 1): got \(got.jsonText)")
    }
  }
}

/// A golden session: `>` lines sent verbatim, `<` lines expected back (compared as parsed JSON),
/// `#` comments, and `#! args:` extra command-line arguments.
struct Transcript {
  static let baseArguments = ["--memory", "--fixed-clock", "2026-01-01T00:00:00.000Z", "--id-seed", "1"]
  var input: [UInt8] = []
  var expected: [JSONValue] = []
  var arguments: [String] = []

  init(contentsOf url: URL) throws {
    for raw in try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false) {
      let line = String(raw)
      if line.hasPrefix("#! args:") {
        arguments += line.dropFirst(8).split(separator: " ").map(String.init)
      } else if line.hasPrefix("> ") {
        input += Array(line.dropFirst(2).utf8) + [0x0A]
      } else if line.hasPrefix("< ") {
        expected.append(try JSONReader.parse(String(line.dropFirst(2)), maxDepth: 1000))
      }
    }
  }
}
