import Synchronization

/// The client-side limiter: at most `limit.count` request starts in any window of `limit.seconds`
/// (plus a small margin, so network jitter cannot make Braze see more than the limit).
struct Pacing {
  var limit: RateLimit
  private var starts: [Double] = []  // monotonic seconds, oldest first

  init(_ limit: RateLimit) { self.limit = limit }

  private var window: Double { limit.seconds + min(0.05, limit.seconds * 0.05) }

  private mutating func prune(_ now: Double) {
    let cut = starts.firstIndex { now - $0 < window } ?? starts.count
    if cut > 0 { starts.removeFirst(cut) }
  }

  /// Nil when a request may start now, else the monotonic time a slot frees up.
  mutating func blockedUntil(_ now: Double) -> Double? {
    prune(now)
    guard starts.count >= limit.count, let oldest = starts.first else { return nil }
    return oldest + window
  }

  mutating func record(_ now: Double) { starts.append(now) }

  /// Requests started in the last window.
  mutating func recent(_ now: Double) -> Int {
    prune(now)
    return starts.count
  }
}

/// Retry delays: exponential in the failures in a row, capped, with jitter (50–100% of the step).
enum Backoff {
  static func delayMs(failures: Int, baseMs: Int, capMs: Int) -> Int {
    let step = min(capMs, baseMs << min(max(failures - 1, 0), 30))
    return Int.random(in: (step / 2)...max(step / 2, step))
  }
}

/// Results from the background queue, collected by the request loop.
final class Inbox<Value: Sendable>: Sendable {
  private let values = Mutex<[Value]>([])

  func put(_ value: Value) { values.withLock { $0.append(value) } }

  func takeAll() -> [Value] {
    values.withLock { all in
      defer { all.removeAll() }; return all
    }
  }
}
