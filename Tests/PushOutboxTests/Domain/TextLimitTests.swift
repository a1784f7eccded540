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

@Suite("TextLimit: 255 characters counted as Unicode scalars")
struct TextLimitTests {
  typealias F = DomainFixture

  @Test(
    "fits is true up to 255 scalars whatever their byte length",
    arguments: [
      ("a", 255, true), ("a", 256, false), ("é", 255, true), ("é", 256, false),
      ("€", 255, true), ("€", 256, false), ("😀", 255, true), ("😀", 256, false),
      ("a", 0, true), ("a", 1021, false),
    ])
  func fits(unit: String, count: Int, expected: Bool) {
    let s = F.repeated(unit, count)
    #expect(TextLimit.fits(s) == expected)
    #expect(TextLimit.characterCount(s) == count)
  }

  @Test("a precomposed é is one character, a decomposed one is two")
  func decomposed() {
    let precomposed = F.repeated("\u{E9}", 255)
    let decomposed = F.repeated("e\u{301}", 128)  // 256 scalars, 128 graphemes
    #expect(precomposed.utf8.count == 510)
    #expect(TextLimit.fits(precomposed))
    #expect(TextLimit.characterCount(decomposed) == 256)
    #expect(!TextLimit.fits(decomposed))
  }

  @Test("truncate keeps 255 scalars and never splits a scalar")
  func truncateScalars() {
    let cut = TextLimit.truncate(F.repeated("😀", 300))
    #expect(cut == F.repeated("😀", 255))
    #expect(cut.utf8.count == 1020)
    #expect(TextLimit.truncate(F.repeated("é", 256)) == F.repeated("é", 255))
    #expect(TextLimit.truncate("short") == "short")
  }

  @Test("truncate keeps whole grapheme clusters")
  func truncateGraphemes() {
    // 254 "a" then a family emoji of 5 scalars: cutting at 255 scalars would split it.
    let family = "👨\u{200D}👩\u{200D}👧"
    let s = F.repeated("a", 254) + family
    #expect(TextLimit.truncate(s) == F.repeated("a", 254))
    let accents = F.repeated("e\u{301}", 200)  // 400 scalars
    let cut = TextLimit.truncate(accents)
    #expect(cut == F.repeated("e\u{301}", 127))
    #expect(TextLimit.characterCount(cut) == 254)
  }

  @Test("a single cluster longer than the limit is cut between scalars")
  func truncateHugeCluster() {
    let s = "e" + F.repeated("\u{301}", 300)
    let cut = TextLimit.truncate(s)
    #expect(TextLimit.characterCount(cut) == 255)
    #expect(cut.unicodeScalars.first == "e")
  }

  @Test("checkValue reports or truncates by policy")
  func checkValue() {
    var issues = Issues()
    #expect(TextLimit.checkValue(F.repeated("x", 255), path: { "p" }, policy: .reject, issues: &issues) == nil)
    #expect(issues.errors.isEmpty && issues.warnings.isEmpty)
    #expect(TextLimit.checkValue(F.repeated("x", 256), path: { "p" }, policy: .reject, issues: &issues) == nil)
    #expect(issues.errorList == ["string_too_long@p"])
    var truncating = Issues()
    let cut = TextLimit.checkValue(F.repeated("x", 256), path: { "q" }, policy: .truncate, issues: &truncating)
    #expect(cut == F.repeated("x", 255))
    #expect(truncating.errors.isEmpty)
    #expect(truncating.warningList == ["string_truncated@q"])
  }
}
