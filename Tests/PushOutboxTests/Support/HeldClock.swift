import Synchronization

@testable import OutboxSupport

/// A monotonic clock a test holds and steps (`MonotonicClock` for `Journal` and `Deliverer`).
final class HeldClock: Sendable {
  private let now: Mutex<Double>

  init(_ seconds: Double = 1_000) { now = Mutex(seconds) }

  var seconds: Double { now.withLock { $0 } }
  func advance(_ by: Double) { now.withLock { $0 += by } }
  func set(_ seconds: Double) { now.withLock { $0 = seconds } }
  var clock: MonotonicClock { MonotonicClock { [self] in seconds } }
}
