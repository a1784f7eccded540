import OutboxStore
import OutboxSupport

extension Deliverer {
  /// The answer to `deliverPending`.
  package struct PassResult: Sendable {
    package var delivered = 0
    package var deadLettered = 0
    package var retrying = 0
    package var remaining = 0

    package init() {}
  }

  /// Items a request failed for at least once since start, still pending (to be retried).
  package var failedStillPending: Int {
    stats.retrying.lazy.filter { self.store.items.contains(seq: $0) && !self.store.items.isDead(seq: $0) }.count
  }

  /// One delivery pass, run to its end on the calling (loop) thread: sends until nothing more can be
  /// sent now (everything delivered, or a failure paused delivery), at most `max` objects. After a
  /// failure it starts nothing more (requests already in flight are awaited): the next pass retries.
  package func runPass(max: Int) -> PassResult {
    let before = stats
    let setbacksAtStart = throttle.setbacks
    picking.wake()
    var sent = 0
    var retried: Set<UInt64> = []
    while !StopRequest.isRequested {  // a signal abandons the pass; leases of requests in flight expire
      collect()
      var progress = false
      while sent < max, throttle.setbacks == setbacksAtStart,
        case .started(let objects) = startOne(maxObjects: max - sent)
      {
        sent += objects
        progress = true
      }
      if inFlight == 0 {
        guard !progress, sent < max, throttle.setbacks == setbacksAtStart, let wait = paceWait() else { break }
        waitForAnswer(seconds: min(wait, 0.1))  // only the limiter holds us back: wait for its next slot
        continue
      }
      let retryingBefore = stats.retrying
      waitForAnswer(seconds: 0.05)
      collect()
      retried.formUnion(stats.retrying.subtracting(retryingBefore))
    }
    retried.formUnion(stats.retrying.subtracting(before.retrying))
    var result = PassResult()
    result.delivered = stats.delivered - before.delivered
    result.deadLettered = stats.deadLettered - before.deadLettered
    result.retrying = retried.filter { store.items.contains(seq: $0) && !store.items.isDead(seq: $0) }.count
    result.remaining = store.count - store.items.leasedCount
    return result
  }

  /// Seconds until the limiter frees a slot, when it is the only thing holding delivery back.
  private func paceWait() -> Double? {
    guard !throttle.isPaused(clock.now()), store.count - store.items.leasedCount > 0 else { return nil }
    return paceBlockedUntil().map { Swift.max(0.001, $0 - Clock.monotonicSeconds()) }
  }

  /// How long the loop may sleep before delivery has work (-1: until input).
  package func pollTimeoutMs() -> Int32 {
    if inFlight > 0 { return 5 }
    guard settings.background, store.count - store.items.leasedCount > 0 else { return -1 }
    let (now, pausedUntil) = (clock.now(), throttle.pausedUntil)
    if now < pausedUntil { return Int32(clamping: Swift.min(pausedUntil - now + 1, 60_000)) }
    if let slot = paceBlockedUntil() {
      return Int32(clamping: Int(Swift.max(1, (slot - Clock.monotonicSeconds()) * 1000 + 1)))
    }
    return 1000  // items are held back only by users in flight or the scan: look again soon
  }

  /// Waits a little for requests in flight to finish (at exit), so fewer are sent twice.
  package func finish(seconds: Double = 2) {
    let deadline = Clock.monotonicSeconds() + (StopRequest.isRequested ? min(seconds, 0.2) : seconds)
    while inFlight > 0 && Clock.monotonicSeconds() < deadline {
      waitForAnswer(seconds: 0.05)
      collect()
    }
  }

  /// What delivery is doing, for `status.delivery` and `push-outbox deliver`.
  package var summary: DeliverySummary {
    var summary = DeliverySummary()
    summary.background = settings.background
    summary.delivered = stats.delivered
    summary.inFlight = inFlight
    summary.retrying = failedStillPending
    summary.pausedUntil = throttle.pausedUntil
    summary.deadLettered = stats.deadLettered
    summary.lastError = stats.lastError
    summary.configError = stats.configError
    summary.failingSince = stats.failingSince
    summary.rate = settings.rate.text
    summary.recentRequests = recentRequests
    summary.requestsByCode = stats.requests
    return summary
  }
}
