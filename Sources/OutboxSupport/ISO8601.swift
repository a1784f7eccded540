/// ISO 8601 date-times as Braze accepts them, without Foundation.
///
/// Accepted: `YYYY-MM-DDTHH:MM`, optional `:SS`, optional fraction (`.` or `,` and 1+ digits,
/// read to the millisecond, extra digits truncated), then an optional zone `Z`, `±HH:MM`, `±HHMM`
/// or `±HH`. Braze's own `yyyy-MM-dd'T'HH:mm:ss:SSSZ` form (`event_object.md`) is accepted too,
/// with exactly three millisecond digits after the third colon. `T` may also be `t` or a space
/// (RFC 3339 §5.6 note) and `Z` may be `z`.
///
/// No zone means UTC: "a value without a zone means midnight UTC" (`user_attributes_object.md`).
/// Impossible values are rejected: month 13, Feb 30, Feb 29 outside leap years, hour 24,
/// minute or second 60 (no leap seconds), offsets beyond ±23:59.
package enum ISO8601 {
  /// Milliseconds since the Unix epoch for an ISO 8601 date-time, or nil.
  package static func parseDateTime(_ s: String) -> Int64? {
    var copy = s
    return copy.withUTF8 { parseDateTime(bytes: $0) }
  }

  /// `parseDateTime` for UTF-8 bytes. A zone offset that moves the instant outside the years
  /// 0000–9999 in UTC is refused, since no one could print it back.
  package static func parseDateTime(bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
    guard let ms = parse(Scanner(bytes: bytes)), validRange.contains(ms) else { return nil }
    return ms
  }

  /// 0000-01-01T00:00:00.000Z through 9999-12-31T23:59:59.999Z.
  static let validRange: ClosedRange<Int64> = -62_167_219_200_000...253_402_300_799_999

  /// True for a real calendar date written exactly `YYYY-MM-DD` (years 0000–9999).
  package static func isDate(_ s: String) -> Bool {
    var copy = s
    return copy.withUTF8 { bytes in
      var scanner = Scanner(bytes: bytes)
      return scanner.date() != nil && scanner.atEnd
    }
  }

  /// The UTC calendar year of `ms` since the epoch.
  package static func year(ms: Int64) -> Int {
    var days = ms / 86_400_000
    if ms % 86_400_000 < 0 { days -= 1 }
    return UTCTime.civil(days: Int(days)).year
  }

  private static func parse(_ start: Scanner) -> Int64? {
    var sc = start
    guard let days = sc.date(), sc.separator(), let time = sc.time(), let offset = sc.zone(), sc.atEnd
    else { return nil }
    return Int64(days) * 86_400_000 + time - Int64(offset) * 60_000
  }

  /// A cursor over UTF-8 bytes.
  private struct Scanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var i = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    var atEnd: Bool { i == bytes.count }

    func peek() -> UInt8? { i < bytes.count ? bytes[i] : nil }

    mutating func take(_ c: Character) -> Bool {
      guard let b = peek(), b == c.asciiValue else { return false }
      i += 1
      return true
    }

    /// Exactly `n` ASCII digits as a number.
    mutating func digits(_ n: Int) -> Int? {
      guard i + n <= bytes.count else { return nil }
      var v = 0
      for k in i..<(i + n) {
        let d = bytes[k] &- 48
        guard d < 10 else { return nil }
        v = v * 10 + Int(d)
      }
      i += n
      return v
    }

    /// `YYYY-MM-DD` as days since the epoch, checked against the calendar.
    mutating func date() -> Int? {
      guard let y = digits(4), take("-"), let m = digits(2), take("-"), let d = digits(2),
        (1...12).contains(m), d >= 1, d <= UTCTime.daysIn(month: m, year: y)
      else { return nil }
      return UTCTime.days(year: y, month: m, day: d)
    }

    mutating func separator() -> Bool { take("T") || take("t") || take(" ") }

    /// `HH:MM[:SS[(.|,)fraction | :SSS]]` as milliseconds into the day.
    mutating func time() -> Int64? {
      guard let h = digits(2), h < 24, take(":"), let m = digits(2), m < 60 else { return nil }
      var sec = 0
      var milli = 0
      if take(":") {
        guard let s = digits(2), s < 60 else { return nil }
        sec = s
        if take(".") || take(",") {
          guard let f = fraction() else { return nil }
          milli = f
        } else if take(":") {  // Braze's yyyy-MM-dd'T'HH:mm:ss:SSSZ
          guard let f = digits(3) else { return nil }
          milli = f
        }
      }
      return Int64(((h * 60 + m) * 60 + sec) * 1000 + milli)
    }

    /// One or more digits after the decimal mark, as whole milliseconds (truncated).
    mutating func fraction() -> Int? {
      var milli = 0
      var count = 0
      while let b = peek(), b &- 48 < 10 {
        if count < 3 { milli = milli * 10 + Int(b - 48) }
        count += 1
        i += 1
      }
      guard count > 0 else { return nil }
      for _ in count..<max(count, 3) { milli *= 10 }
      return milli
    }

    /// The zone as minutes east of UTC; absent means UTC.
    mutating func zone() -> Int? {
      if atEnd || take("Z") || take("z") { return 0 }
      let sign: Int
      if take("+") { sign = 1 } else if take("-") { sign = -1 } else { return nil }
      guard let h = digits(2), h < 24 else { return nil }
      var m = 0
      if take(":") {
        guard let mm = digits(2) else { return nil }
        m = mm
      } else if !atEnd {
        guard let mm = digits(2) else { return nil }
        m = mm
      }
      guard m < 60 else { return nil }
      return sign * (h * 60 + m)
    }
  }
}
