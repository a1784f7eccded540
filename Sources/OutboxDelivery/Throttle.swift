import OutboxSupport

/// When delivery may send again after a setback: the backoff after failures (or Braze's
/// Retry-After, whichever is longer), and the long pause after a 401/403/404.
struct Throttle {
  private let backoffMs: Int
  private let maxBackoffMs: Int
  private let configErrorBackoffMs: Int
  /// Failures in a row since the last delivered request.
  private(set) var failures = 0
  /// Wall-clock ms before which nothing is sent.
  private(set) var pausedUntil: Int64 = 0
  /// Failures and stops so far: a pass stops starting requests after its first one.
  private(set) var setbacks = 0
  /// Monotonic seconds of the last failure that counted toward `failures`.
  private var lastCounted = -Double.infinity

  init(backoffMs: Int, maxBackoffMs: Int, configErrorBackoffMs: Int) {
    self.backoffMs = backoffMs
    self.maxBackoffMs = maxBackoffMs
    self.configErrorBackoffMs = configErrorBackoffMs
  }

  /// True while a setback keeps delivery from sending at wall-clock `nowMs`.
  func isPaused(_ nowMs: Int64) -> Bool { nowMs < pausedUntil }

  /// A failed attempt: pauses for the backoff, or for `afterMs` (Retry-After) if longer; never
  /// shortens a pause already set. A failure counts toward the doubling only when its request left
  /// after the last counted failure (`sentAt`, monotonic seconds): the answers of requests that were
  /// already in flight at one bad moment are one setback, not one each (with a hundred requests in
  /// flight, a burst of 429s would otherwise double the backoff a hundred times). `monotonicNow` is
  /// read on the clock `sentAt` came from. Returns the end of the pause.
  @discardableResult
  mutating func fail(
    nowMs: Int64, afterMs: Int?, sentAt: Double = .infinity, monotonicNow: Double = Clock.monotonicSeconds()
  ) -> Int64 {
    if failures == 0 || sentAt > lastCounted {
      failures += 1
      lastCounted = monotonicNow
    }
    setbacks += 1
    let backoff = Backoff.delayMs(failures: failures, baseMs: backoffMs, capMs: maxBackoffMs)
    pausedUntil = max(pausedUntil, nowMs + Int64(max(backoff, afterMs ?? 0)))
    return pausedUntil
  }

  /// Braze refused the endpoint or key: pauses for the configuration-error backoff.
  @discardableResult
  mutating func stop(nowMs: Int64) -> Int64 {
    setbacks += 1
    pausedUntil = nowMs + Int64(configErrorBackoffMs)
    return pausedUntil
  }

  /// A delivered request ends the run of failures (the next one backs off from the start).
  mutating func delivered() { failures = 0 }
}
