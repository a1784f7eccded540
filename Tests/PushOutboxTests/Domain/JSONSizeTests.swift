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

@Suite("JSONSize: encodedJSONSize equals the writer's byte count")
struct JSONSizeTests {
  @Test(
    "scalar and container sizes match jsonBytes",
    arguments: [
      JSONValue.null, .bool(true), .bool(false), .int(0), .int(7), .int(-7), .int(10), .int(-10), .int(Int64.max),
      .int(Int64.min), .number("2.5e-3"), .number("-0"), .string(""), .string("plain"), .string("é€😀"),
      .string("quote\" back\\ nl\n cr\r tab\t bs\u{8} ff\u{C}"), .string("ctl\u{1}\u{1F}\u{7F}"),
      .string("ls\u{2028}ps\u{2029}"), .string("\u{E2}\u{2027}\u{2030}"), .array([]), .object([]),
      .array([.int(1), .string("a"), .null]),
      .object([JSONMember("k\"", .array([.object([JSONMember("", .bool(true))])]))]),
    ])
  func matches(value: JSONValue) {
    #expect(value.encodedJSONSize == value.jsonBytes.count)
  }

  @Test("a parsed document's size matches its re-encoded text")
  func document() {
    let value = DomainFixture.json(#"{"a":[1,2.50,"x\u2028y",{"b":null,"c":"\u0000"}],"d":"😀","e":{}}"#)
    #expect(value.encodedJSONSize == value.jsonBytes.count)
    #expect(JSONSize.object(value.objectValue!) == value.jsonBytes.count)
  }

  @Test("stringBound is never below the exact size")
  func bound() {
    for s in ["", "a", "\u{1}\u{1}", "\u{2028}", "\"\\", "é"] {
      #expect(JSONSize.stringBound(s) >= JSONSize.string(s))
    }
  }
}
