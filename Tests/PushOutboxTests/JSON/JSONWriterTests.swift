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

@Suite struct JSONWriterTests {
  @Test(arguments: [
    (JSONValue.string("line\nbreak\r\t\"q\" \\ \u{1}"), #""line\nbreak\r\t\"q\" \\ \u0001""#),
    (.string("sep\u{2028}and\u{2029}"), #""sep\u2028and\u2029""#),
    (.string("é𝄞/"), "\"é𝄞/\""),
    (.int(-9_223_372_036_854_775_808), "-9223372036854775808"),
    (.number("1.50"), "1.50"),
    (.double(3), "3.0"),
    (
      .object([JSONMember("z", .int(1)), JSONMember("a", .array([.null, .bool(false)]))]), #"{"z":1,"a":[null,false]}"#
    ),
  ])
  func writesCompactExactJSON(value: JSONValue, expected: String) {
    #expect(value.jsonText == expected)
  }

  @Test func outputHasNoRawLineBreaks() {
    let value = JSONValue.string(
      (0..<0x30).map { String(UnicodeScalar(UInt8($0))) }.joined() + "\u{2028}\u{2029}\u{85}")
    let bytes = value.jsonBytes
    #expect(!bytes.contains(0x0A) && !bytes.contains(0x0D))
    #expect(!String(decoding: bytes, as: UTF8.self).contains("\u{2028}"))
  }

  @Test(arguments: [
    #"{"a":[1,2.5,-0,1e400,"x\u0000y",{"b":null}],"c":true}"#,
    #"[18446744073709551616,0.1,-1.5E-7]"#,
  ])
  func roundTripsByteForByte(text: String) throws {
    let value = try JSONReader.parse(Array(text.utf8))
    #expect(value.jsonText == text)
  }
}
