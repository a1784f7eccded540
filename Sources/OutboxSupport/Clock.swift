/// Wall-clock time in milliseconds since the Unix epoch, or a fixed instant for tests.
///
/// Formatting happens when a value is written, never per request, so the hot path only reads the clock.
package struct Clock: Sendable {
  private let fixed: Int64?

  package static let system = Clock(fixed: nil)

  /// A clock that always answers `ms` (the `--fixed-clock` test flag).
  package static func fixed(_ ms: Int64) -> Clock { Clock(fixed: ms) }

  package func now() -> Int64 {
    if let fixed { return fixed }
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
  }

  /// Seconds on a clock that never jumps, for intervals.
  package static func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
  }
}

/// Monotonic seconds as a value a type is given, so that a test can hold time still or step it:
/// `system` reads `Clock.monotonicSeconds()`; a test passes its own reading.
package struct MonotonicClock: Sendable {
  private let read: @Sendable () -> Double

  package init(_ read: @escaping @Sendable () -> Double) { self.read = read }

  package static let system = MonotonicClock { Clock.monotonicSeconds() }

  package func seconds() -> Double { read() }
}
