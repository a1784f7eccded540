import Testing

@testable import OutboxDomain
@testable import OutboxJSON

/// The tolerant reader: errors at the byte where they occur, recovery that keeps checking, and bad
/// input (deep nesting, bad UTF-8, lone surrogates, anything) that never traps.
@Suite("PayloadReader")
struct PayloadReaderTests {
  static func findings(_ text: String) -> [PayloadFinding] { PayloadCheck.check(Array(text.utf8)).findings }

  @Test("a syntax error is at its byte, and the rules still run on what was read after it")
  func recoversAndKeepsChecking() {
    let text = #"{"aps": {"badge" 1, "sound": 2}, "ab": {"att": {"url": "https://x.example/a", "type": "tiff"}}}"#
    let found = Self.findings(text)
    let syntax = found.filter { $0.code == "json-syntax" }
    #expect(syntax.map(\.start) == [Array(text.utf8).firstIndex(of: UInt8(ascii: "1"))!])
    #expect(found.contains { $0.code == "att-file-type" }, "checked after the error")
    #expect(!found.contains { $0.code == "attachment-needs-mutable-content" }, "absence rules wait for valid JSON")
  }

  @Test("a missing comma between members is one error and the next member is still read")
  func missingComma() {
    let found = Self.findings(#"{"aps": {"badge": 1 "sound": 2}}"#)
    #expect(found.map(\.code) == ["json-syntax", "sound-type"])
  }

  @Test("nesting 10,000 deep is one error, no crash")
  func deepNesting() {
    let deep =
      #"{"aps": {}, "x": "# + String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000) + "}"
    let found = Self.findings(deep)
    #expect(found.filter { $0.code == "json-syntax" }.count == 1)
    let unclosed = String(repeating: "{\"a\":", count: 10_000)
    #expect(!Self.findings(unclosed).isEmpty)
  }

  @Test("invalid UTF-8 and lone surrogates are findings; the values read with U+FFFD")
  func badText() {
    var bytes = Array(#"{"aps": {"alert": "ab"}, "k": "\udc00"}"#.utf8)
    bytes.insert(0xC0, at: 20)
    let (tree, found) = PayloadCheck.check(bytes)
    #expect(found.map(\.code) == ["invalid-utf8", "lone-surrogate"])
    #expect(tree.root?["aps"]?["alert"]?.text == "a\u{FFFD}b")
  }

  @Test("the compact size is what JSONWriter writes")
  func compactSize() throws {
    let text = #"{ "aps" : { "alert" : "h\u00e9\n\"" , "badge" : 1.50 }, "a" : [ true , null ] }"#
    let tree = PayloadTree.read(Array(text.utf8))
    let value = try JSONReader.parse(text)
    #expect(tree.root?.compactSize == value.jsonBytes.count)
  }

  @Test("random bytes and random cuts of payloads never trap and findings stay in the text")
  func anythingGoes() {
    var rng = SystemRandomNumberGenerator()
    let seed = Array(
      #"{"aps": {"alert": {"title": "é😀"}, "badge": "3"}, "ab": {"att": {"url": "u", "type": "x"}}}"#.utf8)
    let alphabet = Array(#"{}[]",:\ u0123456789abcdefnrtl-+.eE"#.utf8) + [0xC3, 0xA9, 0xF0, 0x9F, 0xFF, 0x0A]
    for _ in 0..<3000 {
      var bytes = Array(seed.prefix(Int.random(in: 0...seed.count, using: &rng)))
      for _ in 0..<Int.random(in: 0...8, using: &rng) {
        let b = alphabet.randomElement(using: &rng)!
        bytes.insert(b, at: Int.random(in: 0...bytes.count, using: &rng))
      }
      for f in PayloadCheck.check(bytes).findings {
        #expect(f.start >= 0 && f.start <= f.end && f.end <= bytes.count, "\(f.code) \(f.start)..<\(f.end)")
      }
    }
  }

  @Test("parsePayload returns the table's findings with their paths")
  func parsePayloadDiagnostics() {
    var issues = Issues()
    let result = PushPayload.parse(
      payload: .string(#"{"aps": {"badge": "3"}}"#), require: nil, categories: nil, issues: &issues)
    let first = result["diagnostics"]?.arrayValue?.first
    #expect(first?["code"] == .string("badge-type"))
    #expect(first?["path"] == .string("aps.badge"))
    #expect(first?["severity"] == .string("error"))
    #expect(first?["start"] == .int(18) && first?["end"] == .int(21))
    let object = PushPayload.parse(
      payload: DomainFixture.json(#"{"aps": {"badge": "3"}}"#), require: nil, categories: nil, issues: &issues)
    #expect(object["diagnostics"]?.arrayValue?.first?["start"] == nil, "an object has no text to point into")
  }
}
