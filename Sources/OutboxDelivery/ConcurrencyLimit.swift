/// How many requests may be in flight at once: a fixed number (`--braze-max-in-flight N`), or
/// (the default, `auto`) a limit that follows the round trip, after Vector's adaptive request
/// concurrency (RFC 1858) and TCP's congestion window (AIMD).
///
/// - It starts at `initial(rate)` and, while every slot is used and answers come back at a steady round
///   trip, grows by one per answer (slow start: doubling per round trip) until the first setback,
///   then by one per round trip (`+1/limit` per answer). It grows only when the limit is what held
///   sending back (the request left with every slot taken), so a rate limit that binds first
///   stops its growth: the configured `--braze-rate` is what limits delivery.
/// - It is cut on a setback: ×0.5 on 429 (Braze's own rate limit), ×0.75 on 5xx, a timeout or a
///   connection failure, ×0.9 on a round trip well above its moving average (mean plus three mean
///   deviations, at least 25% and 5 ms above); at most once per round trip, so the answers of one
///   bad moment count as one setback. It never goes below 1 or above `ceiling`.
///
/// Invariant: `1 <= value <= ceiling`; a fixed limit never changes.
package struct ConcurrencyLimit: Sendable {
  /// The documented upper bound of `auto`.
  package static let autoCeiling = 512

  package let ceiling: Int
  package let adaptive: Bool
  private var current: Double
  private var slowStart = true
  /// Smoothed round trip of successful answers, and its mean deviation (seconds).
  private(set) var meanRoundTrip: Double?
  private var deviation = 0.0
  /// Monotonic seconds of the last cut.
  private var lastCut = -Double.infinity

  /// A fixed limit of `fixed`, or the adaptive one up to `autoCeiling` when nil, starting from
  /// what `rate` needs over a 50 ms round trip (rate × round trip, TCP's bandwidth-delay product),
  /// at least 4 and at most 64.
  package init(fixed: Int?, rate: RateLimit = RateLimit(count: 500, seconds: 1)) {
    adaptive = fixed == nil
    ceiling = max(1, fixed ?? Self.autoCeiling)
    current = adaptive ? min(Self.initial(rate), Double(ceiling)) : Double(ceiling)
  }

  /// The adaptive limit's start for `rate`.
  package static func initial(_ rate: RateLimit) -> Double {
    min(64, max(4, (Double(rate.count) / rate.seconds * 0.05).rounded()))
  }

  /// Requests that may be in flight now.
  package var value: Int { max(1, min(ceiling, Int(current))) }

  /// What one answer said about the path to Braze.
  package enum Signal: Sendable {
    /// A 2xx, or an answer that is no setback (a 400, a configuration error).
    case answered
    /// 429: Braze's own rate limit.
    case rateLimited
    /// 5xx, a timeout, a connection failure.
    case failed
  }

  /// One answer: `roundTrip` seconds after it left, `atLimit` whether it left with every slot taken.
  package mutating func record(_ signal: Signal, roundTrip: Double, atLimit: Bool, now: Double) {
    guard adaptive else { return }
    switch signal {
    case .rateLimited: cut(0.5, now)
    case .failed: cut(0.75, now)
    case .answered:
      let mean = meanRoundTrip ?? roundTrip
      let slow = roundTrip > mean + max(3 * deviation, 0.25 * mean, 0.005)
      deviation += 0.1 * (abs(roundTrip - mean) - deviation)
      meanRoundTrip = mean + 0.1 * (roundTrip - mean)
      if slow { return cut(0.9, now) }
      guard atLimit else { return }
      current = min(Double(ceiling), current + (slowStart ? 1 : 1 / current))
    }
  }

  /// What the answer `result` says of the path (nil: the request never left).
  package static func signal(_ result: PostResult) -> Signal? {
    switch result {
    case .failure(.notSent): nil
    case .failure: .failed
    case .success(let answer) where answer.status == 429: .rateLimited
    case .success(let answer) where answer.status >= 500 || answer.status == 408: .failed
    case .success: .answered
    }
  }

  private mutating func cut(_ factor: Double, _ now: Double) {
    slowStart = false
    guard now - lastCut >= (meanRoundTrip ?? 0.1) else { return }
    lastCut = now
    current = max(1, current * factor)
  }
}
