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

/// Issue 17, defects 2, 3, 8 and 11: server text is redacted, escaped and bounded on a character
/// boundary; the status table is one function with a row per code class.
@Suite struct ServerTextTests {
  @Test func everyStatusCodeHasOneHandling() {
    let expected: [(ClosedRange<Int>, Verdict.Handling)] = [
      (100...199, .protocolFault), (200...299, .delivered), (300...399, .protocolFault), (600...999, .protocolFault),
      (500...599, .retry),
    ]
    for (range, handling) in expected {
      for code in range { #expect(Verdict.handling(of: code) == handling, "\(code)") }
    }
    for code in [400, 413, 422] { #expect(Verdict.handling(of: code) == .split, "\(code)") }
    for code in [408, 409, 425, 429] { #expect(Verdict.handling(of: code) == .retry, "\(code)") }
    for code in 400...499 where ![400, 413, 422, 408, 409, 425, 429].contains(code) {
      #expect(Verdict.handling(of: code) == .stop, "\(code)")
    }
  }

  @Test func theKeyNeverSurvivesCleaning() {
    let key = Secret("0123abcd-4567-89ef-0123-456789abcdef")
    var random = SystemRandomNumberGenerator()
    let pieces = [
      "0123abcd-4567-89ef-0123-456789abcdef", "Bearer ", "\n", "\u{1b}[2J", "é", "👍🏽", "x", " ", "\u{85}", "\u{301}",
      ">",
    ]
    for _ in 0..<2000 {
      let text = (0..<Int.random(in: 0..<400, using: &random)).map { _ in pieces.randomElement(using: &random)! }
        .joined()
      let clean = ServerText.clean(text, key: key)
      #expect(!containsBytes(clean, "0123abcd-4567-89ef-0123-456789abcdef"), "\(text.debugDescription)")
      #expect(!clean.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
      #expect(clean.utf8.count <= ServerText.maxBytes)
    }
  }

  /// Byte-wise containment: a character-wise `contains` misses the key before a combining mark.
  private func containsBytes(_ text: String, _ key: String) -> Bool {
    let (bytes, needle) = (Array(text.utf8), Array(key.utf8))
    guard bytes.count >= needle.count else { return false }
    return (0...(bytes.count - needle.count)).contains { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
  }

  @Test func aMarkerNextToKeyCharactersCannotFormTheKey() {
    let key = Secret(">>>>")
    #expect(!containsBytes(ServerText.clean(String(repeating: ">", count: 11), key: key), ">>>>"))
    #expect(ServerText.clean("abcd\u{301}", key: Secret("abcd")) == "<redacted>\u{301}")
  }

  @Test func cutsFallOnCharacterBoundaries() {
    let text = String(repeating: "é", count: 3000)  // two bytes each
    #expect(text.prefix(utf8Bytes: 4095).utf8.count == 4094)
    #expect(text.prefix(utf8Bytes: 4095).allSatisfy { $0 == "é" })
    #expect("ab👍🏽".prefix(utf8Bytes: 5) == "ab")
    #expect("abc".prefix(utf8Bytes: 10) == "abc")
  }

  @Test func aForgedLogLineIsEscaped() {
    #expect(
      "x\npush-outbox: info: all delivered\n\u{1b}[2J".escapingControlCharacters
        == "x\\npush-outbox: info: all delivered\\n\\u{1b}[2J")
  }

  @Test func verdictsCarryCleanText() {
    let key = Secret("SECRETKEY-123")
    let body = Array(#"{"message":"bad key SECRETKEY-123\n\u001b[2J"}"#.utf8)
    let response = HTTPResponse(status: 401, body: body)
    let verdict = Verdict.of(.success(response), TrackBatch(), nowMs: 0, key: key)
    #expect(verdict == .stop(reason: "HTTP 401: bad key <redacted>\\n\\u{1b}[2J"))
  }
}
