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

/// The built binary over real pipes: framing, purity of stdout, limits and the command line.
@Suite struct EndToEndTests {
  static let fixed = ["--memory", "--fixed-clock", "2026-01-01T00:00:00.000Z", "--id-seed", "1"]

  static func request(_ id: Int, _ method: String, _ params: String = "{}") -> String {
    #"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)","params":\#(params)}"#
  }

  @Test func stdoutCarriesOnlyJSONResponseLines() throws {
    let input =
      [
        Self.request(1, "saveCustomEvent", #"{"name":"a","properties":{"s":"x\u2028y"}}"#), "garbage", "", "[]",
        #"{"jsonrpc":"2.0","method":"status"}"#, Self.request(2, "flushPending"),
        "[1,{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"status\"}]",
      ].joined(separator: "\n") + "\n"
    let run = try runBinary(Self.fixed + ["--log-level", "debug"], input: Array(input.utf8))
    #expect(run.status == 0)
    let output = lines(run.stdout)
    #expect(output.count == 5)
    for line in output {
      let value = try JSONReader.parse(line)
      let objects = value.arrayValue ?? [value]
      #expect(!objects.isEmpty)
      for object in objects {
        #expect(object["jsonrpc"] == .string("2.0"))
        #expect(object["id"] != nil)
        #expect((object["result"] == nil) != (object["error"] == nil))
      }
      #expect(!line.contains("\r") && !line.contains("\u{2028}"))
    }
    #expect(run.stdout.last == 0x0A)
    #expect(!run.stdout.starts(with: [0xEF, 0xBB, 0xBF]))
  }

  @Test func aSingleRequestIsAnsweredWithoutClosingStdin() throws {
    let server = try ServerProcess(Self.fixed)
    server.send(Self.request(7, "status"))
    let reply = try #require(server.readLine(timeout: 5))
    #expect(try JSONReader.parse(reply)["id"] == .int(7))
    server.closeInput()
    #expect(server.waitForExit() == 0)
  }

  @Test func finalLineWithoutNewlineAndCRLFAndBOMAreAnswered() throws {
    let input = [0xEF, 0xBB, 0xBF] + Array((Self.request(1, "status") + "\r\n" + Self.request(2, "status")).utf8)
    let run = try runBinary(Self.fixed, input: input)
    #expect(lines(run.stdout).compactMap { try? JSONReader.parse($0)["id"] } == [.int(1), .int(2)])
    #expect(run.status == 0)
  }

  @Test func aTenMebibyteLineRoundTrips() throws {
    let big = String(repeating: "abcdefghij", count: 1_048_576)
    let line = Self.request(1, "parsePayload", #"{"payload":{"big":"\#(big)"}}"#) + "\n"
    let run = try runBinary(Self.fixed, input: Array(line.utf8))
    let reply = try JSONReader.parse(try #require(lines(run.stdout).first), maxDepth: 16)
    let echoed = reply.at("result.extras.big") == .string(big)  // compared outside #expect: 10 MiB of text
    #expect(echoed)
    #expect(run.status == 0)
  }

  @Test func anOverlongLineGetsOneErrorAndTheNextLineIsServed() throws {
    let long = Self.request(1, "parsePayload", #"{"payload":{"x":"\#(String(repeating: "y", count: 5000))"}}"#)
    let run = try runBinary(
      Self.fixed + ["--max-line-bytes", "1000"], input: Array((long + "\n" + Self.request(2, "status") + "\n").utf8))
    let replies = try lines(run.stdout).map { try JSONReader.parse($0) }
    #expect(replies.count == 2)
    #expect(replies.first?.at("error.code") == .int(-32700))
    #expect(replies.first?["id"] == .null)
    #expect(replies.first?.at("error.data.reason") == .string("line_too_long"))
    #expect(replies.last?["id"] == .int(2))
  }

  @Test func theLineLimitCountsTheMessageNotItsCRorBOM() throws {
    let params = #"{"payload":{"x":"\#(String(repeating: "y", count: 100))"}}"#
    let request = Self.request(1, "parsePayload", params)
    let limit = String(request.utf8.count)
    let input = "\u{FEFF}" + request + "\r\n" + "\u{FEFF}" + Self.request(22, "parsePayload", params) + "\r\n"
    let run = try runBinary(Self.fixed + ["--max-line-bytes", limit], input: Array(input.utf8))
    let replies = try lines(run.stdout).map { try JSONReader.parse($0) }
    #expect(replies.count == 2)
    #expect(replies.first?["id"] == .int(1))
    #expect(replies.first?["result"] != nil)
    #expect(replies.last?.at("error.data.reason") == .string("line_too_long"))
  }

  @Test func everyJSONTestSuiteNFileIsAParseErrorOverThePipe() throws {
    let dir = JSONReaderTests.suite
    var input: [UInt8] = []
    var expected = 0
    for name in JSONReaderTests.files("n_") {
      let bytes = try [UInt8](Data(contentsOf: dir.appendingPathComponent(name)))
      // Lines are the framing: files holding a newline, or blank after framing, are covered by the parser tests.
      let blank = bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
      if bytes.contains(0x0A) || blank { continue }
      input += bytes + [0x0A]
      expected += 1
    }
    let run = try runBinary(Self.fixed, input: input)
    let replies = try lines(run.stdout).map { try JSONReader.parse($0) }
    #expect(expected > 170)
    #expect(replies.count == expected)
    #expect(replies.allSatisfy { $0.at("error.code") == .int(-32700) && $0["id"] == .null })
    #expect(run.status == 0)
  }

  @Test func noJSONTestSuiteYFileIsAParseError() throws {
    let dir = JSONReaderTests.suite
    var input: [UInt8] = []
    for name in JSONReaderTests.files("y_") {
      let bytes = try [UInt8](Data(contentsOf: dir.appendingPathComponent(name)))
      if !bytes.contains(0x0A) { input += bytes + [0x0A] }
    }
    let run = try runBinary(Self.fixed, input: input)
    let replies = try lines(run.stdout).map { try JSONReader.parse($0) }
    #expect(replies.count > 80)
    #expect(!replies.contains { $0.at("error.code") == .int(-32700) })
  }

  @Test func helpVersionAndBadFlags() throws {
    let help = try runBinary(["--help"], input: [])
    #expect(help.status == 0)
    let text = String(decoding: help.stdout, as: UTF8.self)
    for option in Configuration.options { #expect(text.contains(option.name)) }
    #expect(text.contains("EXAMPLE"))
    let version = try runBinary(["--version"], input: [])
    #expect(String(decoding: version.stdout, as: UTF8.self).hasPrefix("push-outbox "))
    for bad in [["--nope"], ["--max-line-bytes", "x"], ["--fsync", "sometimes"], ["--store"]] {
      let run = try runBinary(bad, input: [])
      #expect(run.status == 2, "\(bad)")
      // A start-up failure is also one JSON-RPC error line with id null on stdout (-32007, reason usage).
      let reply = try JSONReader.parse(try #require(lines(run.stdout).first))
      #expect(lines(run.stdout).count == 1 && reply["id"] == .null && reply.at("error.code") == .int(-32007))
      #expect(run.stderr.split(separator: "\n").count == 1, "\(bad): \(run.stderr)")
    }
  }

  @Test func environmentTwinsSetFlags() throws {
    let server = try ServerProcess(Self.fixed, environment: ["PUSH_OUTBOX_MAX_PENDING": "1"])
    server.send(Self.request(1, "saveCustomEvent", #"{"name":"a"}"#))
    server.send(Self.request(2, "saveCustomEvent", #"{"name":"b"}"#))
    #expect(try JSONReader.parse(try #require(server.readLine()))["result"] != nil)
    #expect(try JSONReader.parse(try #require(server.readLine())).at("error.code") == .int(-32001))
    server.closeInput()
    #expect(server.waitForExit() == 0)
  }
}
