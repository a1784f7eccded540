import Testing

@testable import OutboxDelivery

/// The adaptive concurrency limit (issue 41): slow start while the limit binds at a steady round
/// trip, then one more per round trip; cuts on 429, failures and a rising round trip, at most one
/// per round trip; bounds; a fixed limit never moves.
@Suite struct ConcurrencyLimitTests {
  /// `answers` steady answers of `rtt` seconds, `gap` seconds apart, each at the limit or not.
  func feed(
    _ limit: inout ConcurrencyLimit, _ answers: Int, rtt: Double = 0.1, atLimit: Bool = true, from: Double = 0
  )
    -> Double
  {
    var now = from
    for _ in 0..<answers {
      now += 0.001
      limit.record(.answered, roundTrip: rtt, atLimit: atLimit, now: now)
    }
    return now
  }

  @Test func slowStartDoublesPerRoundTripWhileTheLimitBinds() {
    var limit = ConcurrencyLimit(fixed: nil, rate: RateLimit(count: 80, seconds: 1))
    #expect(limit.value == 4)
    _ = feed(&limit, 4)  // one round trip of four answers
    #expect(limit.value == 8)
    _ = feed(&limit, 8)
    #expect(limit.value == 16)
  }

  @Test func itGrowsOnlyWhenTheLimitHeldSendingBack() {
    var limit = ConcurrencyLimit(fixed: nil, rate: RateLimit(count: 80, seconds: 1))
    _ = feed(&limit, 100, atLimit: false)  // the rate limiter or the backlog bound it
    #expect(limit.value == 4)
  }

  @Test func a429HalvesItOncePerRoundTripAndEndsSlowStart() {
    var limit = ConcurrencyLimit(fixed: nil, rate: RateLimit(count: 80, seconds: 1))
    var now = feed(&limit, 4 + 8 + 16 + 32)  // 64
    #expect(limit.value == 64)
    now += 0.2
    for _ in 0..<10 { limit.record(.rateLimited, roundTrip: 0.1, atLimit: true, now: now) }  // one bad moment
    #expect(limit.value == 32)
    now = feed(&limit, 34, from: now + 0.2)  // a round trip after: +1, not doubling
    #expect(limit.value == 33)
    limit.record(.failed, roundTrip: 0.1, atLimit: true, now: now + 0.5)
    #expect(limit.value == 24)  // × 0.75
  }

  @Test func aRisingRoundTripCutsIt() {
    var limit = ConcurrencyLimit(fixed: nil, rate: RateLimit(count: 80, seconds: 1))
    let now = feed(&limit, 4 + 8 + 16)  // 32 at a steady 100 ms
    #expect(limit.value == 32)
    limit.record(.answered, roundTrip: 0.4, atLimit: true, now: now + 0.2)
    #expect(limit.value == 28)  // × 0.9
  }

  @Test func boundsHold() {
    var limit = ConcurrencyLimit(fixed: nil, rate: RateLimit(count: 80, seconds: 1))
    _ = feed(&limit, 10_000)
    #expect(limit.value == ConcurrencyLimit.autoCeiling)
    var now = 100.0
    for _ in 0..<100 {
      now += 1
      limit.record(.rateLimited, roundTrip: 0.1, atLimit: true, now: now)
    }
    #expect(limit.value == 1)
  }

  @Test func aFixedLimitNeverMoves() {
    var limit = ConcurrencyLimit(fixed: 7)
    _ = feed(&limit, 1000)
    limit.record(.rateLimited, roundTrip: 0.1, atLimit: true, now: 5000)
    #expect(limit.value == 7 && !limit.adaptive)
  }

  @Test func itStartsFromWhatTheRateNeedsOverAShortRoundTrip() {
    #expect(ConcurrencyLimit(fixed: nil).value == 25)  // 500/1 × 50 ms
    #expect(ConcurrencyLimit(fixed: nil, rate: RateLimit(count: 1000, seconds: 1)).value == 50)
    #expect(ConcurrencyLimit(fixed: nil, rate: RateLimit(count: 3000, seconds: 1)).value == 64)
    #expect(ConcurrencyLimit(fixed: nil, rate: RateLimit(count: 10, seconds: 1)).value == 4)
  }

  @Test func signalsFromAnswers() {
    #expect(ConcurrencyLimit.signal(.success(HTTPResponse(status: 201))) == .answered)
    #expect(ConcurrencyLimit.signal(.success(HTTPResponse(status: 400))) == .answered)
    #expect(ConcurrencyLimit.signal(.success(HTTPResponse(status: 429))) == .rateLimited)
    #expect(ConcurrencyLimit.signal(.success(HTTPResponse(status: 503))) == .failed)
    #expect(ConcurrencyLimit.signal(.failure(.timeout("t"))) == .failed)
    #expect(ConcurrencyLimit.signal(.failure(.notSent("n"))) == nil)
  }
}
