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

@Suite struct JSONReaderTests {
  static func parse(_ text: String, maxDepth: Int = 128) throws -> JSONValue {
    try JSONReader.parse(Array(text.utf8), maxDepth: maxDepth)
  }

  @Test(arguments: [
    ("1", JSONValue.int(1)),
    ("-0", .number("-0")),
    ("1.0", .number("1.0")),
    ("1e2", .number("1e2")),
    ("9223372036854775807", .int(.max)),
    ("-9223372036854775808", .int(.min)),
    ("9223372036854775808", .number("9223372036854775808")),
    ("18446744073709551616", .number("18446744073709551616")),
    ("true", .bool(true)),
    ("null", .null),
    (#""a\u00e9\ud834\udd1e""#, .string("aé𝄞")),
    (#""\"\\\/\b\f\n\r\t""#, .string("\"\\/\u{8}\u{c}\n\r\t")),
    (#"{"b":1,"a":[true,null]}"#, .object([JSONMember("b", .int(1)), JSONMember("a", .array([.bool(true), .null]))])),
  ])
  func readsValuesExactly(text: String, expected: JSONValue) throws {
    #expect(try Self.parse(text) == expected)
  }

  @Test(arguments: [
    "", " ", "01", "-", "1.", ".5", "1e", "+1", "NaN", "[1,]", "{\"a\":1,}", "[1] x", "{}{}", "\"\t\"",
    "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\\x\"", "tru", "nul", "[", "{\"a\"}", "{1:2}",
  ])
  func rejectsInvalidText(text: String) {
    #expect(throws: JSONParseError.self) { try Self.parse(text) }
  }

  @Test(
    arguments: [
      [0x22, 0xC0, 0xAF, 0x22],  // overlong '/'
      [0x22, 0xED, 0xA0, 0x80, 0x22],  // raw UTF-16 surrogate
      [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // above U+10FFFF
      [0x22, 0xFF, 0x22],
      [0x22, 0xE2, 0x82, 0x22],  // truncated sequence
    ] as [[UInt8]])
  func rejectsInvalidUTF8(bytes: [UInt8]) {
    #expect(throws: JSONParseError.self) { try JSONReader.parse(bytes) }
  }

  @Test func keepsDuplicateKeysAndReportsThem() throws {
    let bytes = Array(#"{"a":1,"a":2}"#.utf8)
    try bytes.withUnsafeBufferPointer { buffer in
      var reader = JSONReader(buffer)
      let value = try reader.parseDocument()
      #expect(value == .object([JSONMember("a", .int(1)), JSONMember("a", .int(2))]))
      let sawDuplicate = reader.sawDuplicateKey
      #expect(sawDuplicate)
    }
  }

  @Test func findsDuplicatesInLargeObjects() throws {
    let members = (0..<40).map { "\"k\($0)\":\($0)" } + ["\"k7\":0"]
    let bytes = Array(("{" + members.joined(separator: ",") + "}").utf8)
    try bytes.withUnsafeBufferPointer { buffer in
      var reader = JSONReader(buffer)
      _ = try reader.parseDocument()
      let sawDuplicate = reader.sawDuplicateKey
      #expect(sawDuplicate)
    }
  }

  @Test func depthLimitStopsDeepInputWithoutCrashing() throws {
    #expect(throws: JSONParseError.self) { try Self.parse(String(repeating: "[", count: 100_000)) }
    let ok = String(repeating: "[", count: 128) + String(repeating: "]", count: 128)
    #expect(throws: Never.self) { try Self.parse(ok) }
    let tooDeep = String(repeating: "[", count: 129) + String(repeating: "]", count: 129)
    #expect(throws: JSONParseError.self) { try Self.parse(tooDeep) }
  }

  // MARK: - JSONTestSuite

  /// nst/JSONTestSuite's test_parsing files, carried in the repository (Tests/data/README.md).
  static let suite = Paths.testData.appendingPathComponent("JSONTestSuite/test_parsing")

  /// The suite's files starting with *prefix*. With the directory missing, one name that is no file,
  /// so each test over them runs one case and fails naming the missing directory (zero arguments
  /// would pass silently).
  static func files(_ prefix: String) -> [String] {
    guard let names = try? FileManager.default.contentsOfDirectory(atPath: suite.path) else {
      return ["(missing) \(suite.path)"]
    }
    return names.filter { $0.hasPrefix(prefix) && $0.hasSuffix(".json") }.sorted()
  }

  /// One suite file's bytes; throws `MissingTestData` (naming the directory) when the suite is absent.
  static func bytes(_ name: String) throws -> [UInt8] {
    try [UInt8](Data(contentsOf: Paths.requiredDirectory(suite).appendingPathComponent(name)))
  }

  @Test func suiteIsPresent() throws {
    _ = try Paths.requiredDirectory(Self.suite)
    #expect(Self.files("y_").count == 95)
    #expect(Self.files("n_").count == 188)
    #expect(Self.files("i_").count == 35)
  }

  @Test(arguments: files("y_"))
  func acceptsEveryYFile(name: String) throws {
    let bytes = try Self.bytes(name)
    #expect(throws: Never.self) { try JSONReader.parse(bytes) }
  }

  @Test(arguments: files("n_"))
  func rejectsEveryNFile(name: String) throws {
    let bytes = try Self.bytes(name)
    #expect(throws: JSONParseError.self) { try JSONReader.parse(bytes) }
  }

  /// What one read gives: the value and duplicate flag, or the error.
  static func read(_ bytes: [UInt8], scratch: TapeScratch?) -> Result<(JSONValue, Bool), JSONParseError> {
    bytes.withUnsafeBufferPointer { buffer in
      do throws(JSONParseError) {
        let tape: JSONTape
        if let scratch {
          tape = try JSONTape.read(buffer, scratch: scratch)
        } else {
          tape = try JSONTape(buffer)
        }
        return .success((tape.value(tape.root), tape.sawDuplicateKey))
      } catch {
        return .failure(error)
      }
    }
  }

  @Test("one scratch reused over every suite file, a big array among them, reads as fresh memory does")
  func scratchReadsLikeFreshMemory() throws {
    var texts = try (Self.files("y_") + Self.files("n_") + Self.files("i_")).map { try Self.bytes($0) }
    var rng = SeededGenerator(seed: 7)
    texts.shuffle(using: &rng)
    // Past what the scratch keeps (TapeScratch.keptCapacity nodes), in the middle and at the end.
    let big = Array(("[" + Array(repeating: "{\"a\":[1,2]}", count: 3000).joined(separator: ",") + "]").utf8)
    texts.insert(big, at: texts.count / 2)
    texts.append(big)
    let scratch = TapeScratch()
    for text in texts {
      switch (Self.read(text, scratch: scratch), Self.read(text, scratch: nil)) {
      case (.success(let reused), .success(let fresh)):
        #expect(reused.0 == fresh.0 && reused.1 == fresh.1)
      case (.failure(let reused), .failure(let fresh)):
        #expect(reused == fresh)
      case (let reused, let fresh):
        Issue.record("reused \(reused) but fresh \(fresh) for \(String(decoding: text.prefix(80), as: UTF8.self))")
      }
    }
  }

  @Test(arguments: files("i_"))
  func survivesEveryIFile(name: String) throws {
    let bytes = try Self.bytes(name)
    // Either answer is allowed; an accepted value must round-trip, a rejection must point inside the input.
    do {
      let value = try JSONReader.parse(bytes)
      #expect(try JSONReader.parse(value.jsonBytes) == value)
    } catch {
      #expect(error.offset >= 0 && error.offset <= bytes.count)
    }
  }
}
