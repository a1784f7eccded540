/// Calendar arithmetic for UTC timestamps, without Foundation.
///
/// Times are milliseconds since the Unix epoch. Formatting is the fixed-width
/// `YYYY-MM-DDTHH:MM:SS.mmmZ` that Braze and every ISO 8601 reader accept.
package enum UTCTime {
  /// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
  static func days(year: Int, month: Int, day: Int) -> Int {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yoe = y - era * 400
    let mp = (month + 9) % 12
    let doy = (153 * mp + 2) / 5 + day - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    return era * 146097 + doe - 719468
  }

  /// The civil date of a day count since 1970-01-01 (`civil_from_days`).
  static func civil(days z0: Int) -> (year: Int, month: Int, day: Int) {
    let z = z0 + 719468
    let era = (z >= 0 ? z : z - 146096) / 146097
    let doe = z - era * 146097
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = doy - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
  }

  /// 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the first and last instants the
  /// fixed-width text can show.
  package static let earliest: Int64 = -62_167_219_200_000
  package static let latest: Int64 = 253_402_300_799_999

  /// True when `ms` lies in `earliest...latest`: two comparisons, without a range (a lazily made global).
  @inline(__always)
  package static func isRepresentable(_ ms: Int64) -> Bool { earliest <= ms && ms <= latest }

  static func isLeap(_ year: Int) -> Bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
  }

  static func daysIn(month: Int, year: Int) -> Int {
    switch month {
    case 2: isLeap(year) ? 29 : 28
    case 4, 6, 9, 11: 30
    default: 31
    }
  }

  /// Appends `2026-01-02T03:04:05.678Z` for `ms` since the epoch (years 0000–9999).
  package static func append(ms: Int64, to out: inout [UInt8]) {
    let totalMs = Int(ms)
    var days = totalMs / 86_400_000
    var rem = totalMs % 86_400_000
    if rem < 0 {
      rem += 86_400_000
      days -= 1
    }
    let (y, mo, d) = civil(days: days)
    func two(_ v: Int) { out.append(UInt8(48 + v / 10)); out.append(UInt8(48 + v % 10)) }
    let year = max(0, min(9999, y))
    two(year / 100); two(year % 100)
    out.append(UInt8(ascii: "-")); two(mo)
    out.append(UInt8(ascii: "-")); two(d)
    out.append(UInt8(ascii: "T")); two(rem / 3_600_000)
    out.append(UInt8(ascii: ":")); two(rem / 60_000 % 60)
    out.append(UInt8(ascii: ":")); two(rem / 1000 % 60)
    out.append(UInt8(ascii: "."))
    let milli = rem % 1000
    out.append(UInt8(48 + milli / 100)); two(milli % 100)
    out.append(UInt8(ascii: "Z"))
  }

  /// `2026-01-02T03:04:05.678Z` for `ms` since the epoch.
  package static func format(ms: Int64) -> String {
    var out: [UInt8] = []
    out.reserveCapacity(24)
    append(ms: ms, to: &out)
    return String(decoding: out, as: UTF8.self)
  }
}

/// The last `savedAt`-style text made, reused while the millisecond stays the same: formatting
/// costs far more than comparing, and a busy loop stamps many requests within one millisecond.
package struct UTCTimeText {
  private var ms: Int64 = .min
  private var text: (UInt64, UInt64, UInt64) = (0, 0, 0)

  package init() {}

  /// The byte count of every text (`2026-01-02T03:04:05.678Z`).
  package static let length = 24

  /// Writes the 24 bytes of `UTCTime.append(ms:)` at `p`.
  @inline(__always)
  package mutating func write(ms: Int64, to p: UnsafeMutablePointer<UInt8>) {
    if ms != self.ms { remake(ms) }
    withUnsafeBytes(of: &text) { p.update(from: $0.bindMemory(to: UInt8.self).baseAddress!, count: Self.length) }
  }

  /// Appends the 24 bytes of `UTCTime.append(ms:)` to `out`.
  package mutating func append(ms: Int64, to out: inout [UInt8]) {
    if ms != self.ms { remake(ms) }
    withUnsafeBytes(of: &text) { out.appendBytes(UnsafeRawBufferPointer(rebasing: $0[0..<Self.length])) }
  }

  private mutating func remake(_ ms: Int64) {
    // Within the same second only the three millisecond digits change.
    if ms >= 0, self.ms >= 0, ms / 1000 == self.ms / 1000 {
      let milli = Int(ms % 1000)
      withUnsafeMutableBytes(of: &text) {
        $0[20] = UInt8(48 + milli / 100)
        $0[21] = UInt8(48 + milli / 10 % 10)
        $0[22] = UInt8(48 + milli % 10)
      }
      self.ms = ms
      return
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(Self.length)
    UTCTime.append(ms: ms, to: &bytes)
    precondition(bytes.count == Self.length)
    withUnsafeMutableBytes(of: &text) { $0.copyBytes(from: bytes) }
    self.ms = ms
  }
}
