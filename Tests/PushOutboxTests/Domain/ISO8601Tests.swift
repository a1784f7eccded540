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

@Suite("ISO8601")
struct ISO8601Tests {
  @Test(
    "valid date-times give milliseconds since the epoch",
    arguments: [
      ("2026-01-02T03:04:05.678Z", 1_767_323_045_678),
      ("2026-01-02T03:04:05.678z", 1_767_323_045_678),
      ("2026-01-02t03:04:05.678Z", 1_767_323_045_678),
      ("2026-01-02 03:04:05.678Z", 1_767_323_045_678),
      ("2026-01-02T03:04:05.678", 1_767_323_045_678),  // no zone: UTC
      ("2026-01-02T03:04:05,678Z", 1_767_323_045_678),  // comma decimal mark
      ("2026-01-02T03:04:05.6789999Z", 1_767_323_045_678),  // truncated to ms
      ("2026-01-02T03:04:05.6Z", 1_767_323_045_600),
      ("2026-01-02T03:04:05:678Z", 1_767_323_045_678),  // Braze yyyy-MM-dd'T'HH:mm:ss:SSSZ
      ("2026-01-02T03:04:05+01:30", 1_767_317_645_000),
      ("2026-01-02T03:04:05+0130", 1_767_317_645_000),
      ("2026-01-02T03:04:05-05:00", 1_767_341_045_000),
      ("2026-01-02T03:04:05-05", 1_767_341_045_000),
      ("2013-07-16T19:20:30:450+0100", 1_373_998_830_450),
      ("2026-01-02T03:04Z", 1_767_323_040_000),  // no seconds
      ("2024-02-29T12:00Z", 1_709_208_000_000),  // leap day
      ("2000-02-29T00:00:00Z", 951_782_400_000),  // 400-year leap day
      ("1969-12-31T23:59:59.999Z", -1),
      ("0001-01-01T00:00:00Z", -62_135_596_800_000),
      ("9999-12-31T23:59:59.999Z", 253_402_300_799_999),
      ("2026-01-02T03:04:05-00:00", 1_767_323_045_000),
    ] as [(String, Int64)])
  func valid(text: String, ms: Int64) {
    #expect(ISO8601.parseDateTime(text) == ms)
  }

  @Test(
    "impossible or malformed date-times are rejected",
    arguments: [
      "", "2026-01-02", "2026-13-01T00:00Z", "2026-00-10T00:00Z", "2026-02-30T00:00Z", "2023-02-29T00:00Z",
      "1900-02-29T00:00Z", "2026-04-31T00:00Z", "2026-01-00T00:00Z", "2026-01-02T24:00Z", "2026-01-02T23:60Z",
      "2026-01-02T23:59:60Z", "2026-01-02T03:04:05.Z", "2026-01-02T03:04:05+24:00", "2026-01-02T03:04:05+01:60",
      "2026-01-02T03:04:05+1", "2026-01-02T03:04:05ZZ", "2026-01-02T03:04:05 ", "26-01-02T03:04Z",
      "2026-1-02T03:04Z", "2026-01-02T3:04Z", "2026-01-02X03:04Z", "2026-01-02T03:04:05:67Z",
      "2026-01-02T03:04:05:6789Z", "２０２６-01-02T03:04Z", "2026-01-02T03:04:05+01:00:00", "now",
    ])
  func invalid(text: String) {
    #expect(ISO8601.parseDateTime(text) == nil)
  }

  @Test(
    "isDate accepts only real YYYY-MM-DD dates",
    arguments: [
      ("1980-12-21", true), ("2024-02-29", true), ("2000-02-29", true), ("0000-01-01", true), ("9999-12-31", true),
      ("2023-02-29", false), ("1900-02-29", false), ("2026-02-30", false), ("2026-04-31", false), ("2026-13-01", false),
      ("2026-00-01", false), ("2026-01-00", false), ("2026-1-1", false), ("20260101", false),
      ("2026-01-01T00:00Z", false),
      ("2026-01-01 ", false), ("", false), ("12/21/1980", false),
    ])
  func isDate(text: String, expected: Bool) {
    #expect(ISO8601.isDate(text) == expected)
  }

  @Test("year(ms:) is the UTC calendar year, also before 1970")
  func year() {
    #expect(ISO8601.year(ms: 0) == 1970)
    #expect(ISO8601.year(ms: -1) == 1969)
    #expect(ISO8601.year(ms: 1_767_323_045_678) == 2026)
    #expect(ISO8601.year(ms: ISO8601.parseDateTime("3000-12-31T23:59:59.999Z")!) == 3000)
    #expect(ISO8601.year(ms: ISO8601.parseDateTime("3001-01-01T00:00Z")!) == 3001)
  }

  @Test("a parsed time formats back to the same instant")
  func roundTrip() {
    let ms = ISO8601.parseDateTime("2026-01-02T04:34:05.678+01:30")!
    #expect(UTCTime.format(ms: ms) == "2026-01-02T03:04:05.678Z")
  }

  @Test("the cached time text equals a fresh format for any sequence of instants", arguments: [1, 2, 3] as [UInt64])
  func cachedText(seed: UInt64) {
    var rng = SeededGenerator(seed: seed)
    var cache = UTCTimeText()
    var ms: Int64 = Int64.random(in: -2_000_000_000_000...4_000_000_000_000, using: &rng)
    for _ in 0..<5000 {
      switch Int.random(in: 0..<4, using: &rng) {
      case 0: ms += Int64.random(in: 0...3, using: &rng)  // the same second, mostly
      case 1: ms += Int64.random(in: 0...1500, using: &rng)  // across a second
      case 2: ms -= Int64.random(in: 0...1500, using: &rng)  // the clock stepped back
      default: ms = Int64.random(in: -62_000_000_000_000...253_000_000_000_000, using: &rng)
      }
      var out: [UInt8] = []
      cache.append(ms: ms, to: &out)
      var written = [UInt8](repeating: 0, count: UTCTimeText.length)
      written.withUnsafeMutableBufferPointer { cache.write(ms: ms, to: $0.baseAddress!) }
      #expect(String(decoding: out, as: UTF8.self) == UTCTime.format(ms: ms), "ms \(ms)")
      #expect(written == out)
    }
  }
}
