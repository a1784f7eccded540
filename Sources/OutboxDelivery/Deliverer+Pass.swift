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

  /// One delivery pass, run to its end on the calling thread (`push-outbox deliver`): the steps of
  /// a `Pass`, waiting for answers between them.
  package func runPass(max: Int) -> PassResult {
    let pass = Pass(self, max: max)
    while true {
      if let result = pass.step() { return result }
      waitForAnswer(seconds: inFlight > 0 ? 0.05 : min(paceWait() ?? 0.05, 0.1))
    }
  }

  /// One delivery pass as steps that never block, so the request loop can run it while it serves
  /// (`deliverPending`): each `step` applies the answers that came back and starts what may start.
  /// It sends until nothing more can be sent now (everything delivered, or a failure paused
  /// delivery), at most `max` objects. After a failure it starts nothing more (requests already in
  /// flight are awaited): the next pass retries. A pass that is dropped (cancelled) simply starts
  /// nothing more; its requests in flight are applied by the deliverer's `tick` as usual.
  package final class Pass {
    private let deliverer: Deliverer
    private let max: Int
    private let before: DeliveryStats
    private let setbacksAtStart: Int
    private var sent = 0
    private var retried: Set<UInt64> = []
    /// Items available when the pass started (for progress).
    private let availableAtStart: Int

    package init(_ deliverer: Deliverer, max: Int) {
      self.deliverer = deliverer
      self.max = max
      before = deliverer.stats
      setbacksAtStart = deliverer.throttle.setbacks
      availableAtStart = deliverer.store.count - deliverer.store.items.leasedCount
      deliverer.picking.wake()
    }

    /// Items settled so far (delivered or dead-lettered), and the total that makes 100%.
    package var progress: (done: Int, total: Int) {
      let stats = deliverer.stats
      let done = stats.delivered - before.delivered + stats.deadLettered - before.deadLettered
      return (done, Swift.max(done, availableAtStart))
    }

    /// Applies answers and starts what may start; the result once the pass is over. A stopping
    /// signal ends it at once (the leases of requests in flight expire).
    package func step() -> PassResult? {
      let d = deliverer
      let retryingBefore = d.stats.retrying
      d.collect()
      retried.formUnion(d.stats.retrying.subtracting(retryingBefore))
      if StopRequest.isRequested { return result() }
      var progress = false
      while sent < max, d.throttle.setbacks == setbacksAtStart,
        case .started(let objects) = d.startOne(maxObjects: max - sent)
      {
        sent += objects
        progress = true
      }
      guard d.inFlight == 0 else { return nil }
      // Nothing in flight: go on only when the limiter alone holds delivery back.
      guard !progress, sent < max, d.throttle.setbacks == setbacksAtStart, d.paceWait() != nil else {
        return result()
      }
      return nil
    }

    /// How long the caller may wait before the next step has work.
    package func pollTimeoutMs() -> Int32 {
      if deliverer.inFlight > 0 { return 5 }
      guard let wait = deliverer.paceWait() else { return 0 }
      return Int32(clamping: Int(Swift.min(wait, 0.1) * 1000) + 1)
    }

    private func result() -> PassResult {
      let d = deliverer
      retried.formUnion(d.stats.retrying.subtracting(before.retrying))
      var result = PassResult()
      result.delivered = d.stats.delivered - before.delivered
      result.deadLettered = d.stats.deadLettered - before.deadLettered
      result.retrying = retried.filter { d.store.items.contains(seq: $0) && !d.store.items.isDead(seq: $0) }.count
      result.remaining = d.store.count - d.store.items.leasedCount
      return result
    }
  }

  /// Seconds until the limiter frees a slot, when it is the only thing holding delivery back.
  func paceWait() -> Double? {
    guard !throttle.isPaused(clock.now()), store.count - store.items.leasedCount > 0 else { return nil }
    return paceBlockedUntil().map { Swift.max(0.001, $0 - monotonic.seconds()) }
  }

  /// How long the loop may sleep before delivery has work (-1: until input).
  package func pollTimeoutMs() -> Int32 {
    if inFlight > 0 { return 5 }
    guard settings.background, store.count - store.items.leasedCount > 0 else { return -1 }
    let (now, pausedUntil) = (clock.now(), throttle.pausedUntil)
    if now < pausedUntil { return Int32(clamping: Swift.min(pausedUntil - now + 1, 60_000)) }
    if let slot = paceBlockedUntil() {
      return Int32(clamping: Int(Swift.max(1, (slot - monotonic.seconds()) * 1000 + 1)))
    }
    return 1000  // items are held back only by users in flight or the scan: look again soon
  }

  /// Waits a little for requests in flight to finish (at exit), so fewer are sent twice. The wait is
  /// real time, on the system's clock, whatever clock the deliverer was given.
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
    summary.maxInFlight = settings.maxInFlight.map(String.init) ?? "auto"
    summary.concurrencyLimit = limit.value
    summary.roundTripMs = limit.meanRoundTrip.map { $0 * 1000 }
    summary.requestsByCode = stats.requests
    return summary
  }
}
