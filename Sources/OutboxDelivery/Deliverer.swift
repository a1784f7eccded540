import Dispatch
import OutboxJSON
package import OutboxStore
package import OutboxSupport

/// Delivers pending items to Braze's `/users/track`, at least once, in per-user order.
///
/// The request loop owns it and the store. For each request it leases the batch's items durably
/// (`Lease(origin: .delivery)`, committed before anything is sent), hands the HTTP call to a
/// background queue, and applies the answer on the loop thread when `collect` finds it in the inbox:
/// ack after a 2xx, dead letters for the objects Braze named, release with backoff otherwise.
/// No two requests in flight hold the same user, so a later value never overtakes an earlier one.
///
/// Its parts own their state: `PickingQueue` what is sent next (users in flight, splits),
/// `Throttle` the pause after setbacks, `Pacing` the request-rate limiter.
package final class Deliverer {
  private struct Flight {
    var seqs: [UInt64]
    var users: Set<UserNumber>
    /// Its slot in the limiter.
    var pacingToken = 0
    /// Monotonic seconds when it left.
    var sentAt = 0.0
  }

  private struct Completion: Sendable {
    var flushId: String
    /// The body that was sent, built on the background queue from the flight's cut.
    var batch: TrackBatch
    var result: Result<HTTPResponse, DeliveryFailure>
    /// Monotonic seconds when the answer (or the failure) came back.
    var answeredAt: Double
  }

  private let settings: DeliverySettings
  private let store: Store
  private let clock: Clock
  /// The clock for intervals (the rate limit, the concurrency limit's round trips); a test's own
  /// reading in tests.
  private let monotonic: MonotonicClock
  private let log: Log
  private let poster: any HTTPPoster
  private let queue = DispatchQueue(label: "push-outbox.delivery", attributes: .concurrent)
  private let inbox = Inbox<Completion>()
  private let wakeup = DispatchSemaphore(value: 0)
  private let picking: PickingQueue
  private var flights: [String: Flight] = [:]
  /// Requests leased while the store wrote a burst off the loop's thread, in order: each is sent
  /// once its lease record is in the file (`sendLeased`).
  private var leasedUnsent: [Unsent] = []
  private var pacing: Pacing
  private(set) var throttle: Throttle
  private(set) var stats = DeliveryStats()
  private(set) var limit: ConcurrencyLimit
  /// Monotonic seconds of the last moment every slot of the limit was taken: an answer to a request
  /// sent before it says the limit held sending back (it may grow).
  private var lastFull = -Double.infinity
  private var counter = 0
  /// Requests a `tick` starts at most while requests wait: delivery's slice of a busy loop.
  static let startsPerBusyTick = 8

  package init(
    settings: DeliverySettings, store: Store, clock: Clock, log: Log, batchLimit: Int, mode: TrackBatchMode,
    poster: any HTTPPoster = CurlPoster(), monotonic: MonotonicClock = .system
  ) {
    self.settings = settings
    self.store = store
    self.clock = clock
    self.monotonic = monotonic
    self.log = log
    self.poster = poster
    self.picking = PickingQueue(store: store, batchLimit: batchLimit, mode: mode)
    self.pacing = Pacing(settings.rate)
    self.limit = ConcurrencyLimit(fixed: settings.maxInFlight, rate: settings.rate)
    self.throttle = Throttle(
      backoffMs: settings.backoffMs, maxBackoffMs: settings.maxBackoffMs,
      configErrorBackoffMs: settings.configErrorBackoffMs)
    releaseLeftovers()
  }

  /// Delivery leases from an earlier process died with it: their items are sent again.
  private func releaseLeftovers() {
    let stale = store.leases.filter { $0.origin == .delivery }
    guard !stale.isEmpty else { return }
    for lease in stale { _ = try? store.release(lease.flushId) }
    if let error = store.commit() { log.error("delivery: cannot record released leases: \(error)") }
    log.info("delivery: \(stale.count) requests in flight at the last stop will be sent again")
  }

  /// Requests in flight.
  var inFlight: Int { flights.count }

  /// Monotonic seconds when the limiter frees a slot; nil when it has one free now.
  func paceBlockedUntil() -> Double? { pacing.blockedUntil(monotonic.seconds()) }

  /// Requests the limiter counts in its current window.
  private var recentRequests: Int { pacing.recent(monotonic.seconds()) }

  // MARK: - Starting requests

  enum Start {
    case started(objects: Int)
    case nothingToSend
    case waiting
  }

  /// Background delivery (`--deliver`), from the loop's every turn: apply answers, start what may
  /// start, with no pause between sends. While requests wait (`busy`) it starts at most
  /// `startsPerBusyTick` requests a turn, so the loop goes back to them between slices.
  package func tick(busy: Bool = false) {
    collect()
    sendLeased()
    guard settings.background else { return }
    var started = 0
    while !busy || started < Self.startsPerBusyTick, case .started = startOne(maxObjects: Int.max) { started += 1 }
  }

  /// Starts one request if the limits allow and something can be sent; `maxObjects` caps its size.
  func startOne(maxObjects: Int) -> Start {
    guard !throttle.isPaused(clock.now()), paceBlockedUntil() == nil else { return .waiting }
    guard flights.count < limit.value else {
      lastFull = monotonic.seconds()
      return .waiting
    }
    let noIdentifier = picking.noIdentifierCount
    let cut = picking.next(maxObjects: maxObjects)
    stats.deadLettered += picking.noIdentifierCount - noIdentifier
    guard let cut else { return flights.isEmpty ? .nothingToSend : .waiting }
    counter += 1
    let now = clock.now()
    let flushId = "delivery-\(now)-\(counter)"
    let expires = now + Int64(settings.timeoutMs) * 2 + 60_000
    let leaseSeq = store.lease(Lease(flushId: flushId, seqs: cut.seqs, expiresAt: expires, note: [], origin: .delivery))
    // Nothing is sent before its lease is durable. While the store writes a burst off the loop's
    // thread, the lease goes with the next write (a commit now would wait for this one).
    let deferred = store.hasWriteInFlight
    if !deferred, let error = store.commit() {
      _ = try? store.release(flushId)
      fail(reason: "cannot record the lease: \(error)", afterMs: nil)
      return .waiting
    }
    guard cut.objects > 0 else {  // only superseded values: nothing to send
      store.settle(flushId, delivered: cut.seqs, dead: [])
      if !deferred { _ = store.commit() }
      return .started(objects: 0)
    }
    let sentAt = monotonic.seconds()
    let token = pacing.record(sentAt)
    flights[flushId] = Flight(seqs: cut.seqs, users: cut.users, pacingToken: token, sentAt: sentAt)
    if flights.count >= limit.value { lastFull = sentAt }
    picking.hold(cut.users)
    if deferred {
      leasedUnsent.append(Unsent(flushId: flushId, cut: cut, leaseSeq: leaseSeq, failures: store.writeFailures))
    } else {
      send(flushId, cut)
    }
    return .started(objects: cut.objects)
  }

  /// A request leased while a write was in the air: sent once `leaseSeq` is written, given back if
  /// a write failed after it was leased (a save in it may have been taken back).
  private struct Unsent {
    var flushId: String
    var cut: Cut
    var leaseSeq: UInt64
    var failures: Int
  }

  /// Sends the leased requests whose lease records are written now (writing them first when no
  /// write is in the air), in order; gives back those a failed write may have changed.
  private func sendLeased() {
    guard !leasedUnsent.isEmpty else { return }
    if !store.hasWriteInFlight, let error = store.commit() {
      log.error("delivery: cannot record the leases: \(error)")
    }
    var kept: [Unsent] = []
    for unsent in leasedUnsent {
      if store.writeFailures != unsent.failures {
        giveBack(unsent.flushId)
      } else if store.isWritten(unsent.leaseSeq) {
        flights[unsent.flushId]?.sentAt = monotonic.seconds()
        send(unsent.flushId, unsent.cut)
      } else {
        kept.append(unsent)
      }
    }
    leasedUnsent = kept
  }

  /// Ends a request that was never sent: its lease is released and its slot freed.
  private func giveBack(_ flushId: String) {
    guard let flight = flights.removeValue(forKey: flushId) else { return }
    _ = try? store.release(flushId)
    picking.free(flight.users)
    pacing.answered(flight.pacingToken, at: monotonic.seconds())
    log.warn("delivery: a write failed before request \(flushId) was sent; its items wait for the next")
  }

  /// Builds the body on the background queue and hands it to the poster; the answer comes back
  /// through the inbox.
  private func send(_ flushId: String, _ cut: Cut) {
    guard let url = settings.url, let key = settings.apiKey else { return }
    let (poster, inbox, wakeup, monotonic) = (poster, inbox, wakeup, monotonic)
    let (timeout, connect) = (settings.timeoutMs, settings.connectTimeoutMs)
    queue.async {
      let batch =
        UsersTrack.batches(cut.items, superseded: cut.superseded, defaultUser: nil, limit: Int.max, mode: .perArray)
        .first ?? TrackBatch()
      var body: [UInt8] = []
      batch.appendBody(to: &body)
      let request = HTTPRequest(url: url, bearer: key, body: body, timeoutMs: timeout, connectTimeoutMs: connect)
      poster.start(request) { result in
        inbox.put(Completion(flushId: flushId, batch: batch, result: result, answeredAt: monotonic.seconds()))
        wakeup.signal()
      }
    }
  }

  // MARK: - Collecting answers

  /// Applies every answer that has arrived. Returns how many.
  @discardableResult
  func collect() -> Int {
    let done = inbox.takeAll()
    for completion in done { apply(completion) }
    if !done.isEmpty { picking.answered() }
    // While a write is in the air, the results go with the next one (a commit now would wait).
    if !done.isEmpty, !store.hasWriteInFlight, let error = store.commit() {
      log.error("delivery: cannot record results: \(error)")
    }
    return done.count
  }

  /// Blocks until an answer arrives or `seconds` pass.
  func waitForAnswer(seconds: Double) {
    _ = wakeup.wait(timeout: .now() + seconds)
  }

  /// Applies one answer to the store (on the loop thread).
  private func apply(_ completion: Completion) {
    guard let flight = flights.removeValue(forKey: completion.flushId) else { return }
    picking.free(flight.users)
    pacing.answered(flight.pacingToken, at: completion.answeredAt)
    if let signal = ConcurrencyLimit.signal(completion.result) {
      limit.record(
        signal, roundTrip: completion.answeredAt - flight.sentAt, atLimit: lastFull >= flight.sentAt,
        now: completion.answeredAt)
    }
    var batch = completion.batch
    batch.seqs = flight.seqs  // the lease's items, whatever the body carried
    switch completion.result {
    case .success(let response): stats.requests[String(response.status), default: 0] += 1
    case .failure: stats.requests["error", default: 0] += 1
    }
    switch Verdict.of(completion.result, batch, nowMs: clock.now(), key: settings.apiKey) {
    case .delivered(let dead):
      delivered(completion.flushId, batch, dead: dead)
    case .retry(let afterMs, let reason):
      store.settle(completion.flushId, delivered: [], dead: [])
      stats.retrying.formUnion(batch.seqs)
      picking.dropSplits()
      fail(reason: reason, afterMs: afterMs, sentAt: flight.sentAt)
    case .split(let reason):
      split(completion.flushId, batch, reason: reason)
    case .stop(let reason):
      store.settle(completion.flushId, delivered: [], dead: [])
      stats.retrying.formUnion(batch.seqs)
      picking.dropSplits()
      stop(reason: reason)
    }
  }

  private func delivered(_ flushId: String, _ batch: TrackBatch, dead: [UInt64: String]) {
    let back = carriedBack(batch, dead: Set(dead.keys))
    let delivered = batch.seqs.filter { dead[$0] == nil && !back.contains($0) }
    store.settle(flushId, delivered: delivered, dead: dead.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    stats.delivered += delivered.count
    stats.deadLettered += dead.count
    stats.retrying.subtract(batch.seqs)
    picking.forget(batch.seqs)
    throttle.delivered()
    stats.configError = nil
    stats.failingSince = nil
  }

  /// A 400 for the whole request: halve the batch until the bad object is alone, then dead-letter it.
  private func split(_ flushId: String, _ batch: TrackBatch, reason: String) {
    let objects = batch.attributeSeqs + batch.eventSeqs
    if objects.count <= 1 {
      let dead = objects.map { ($0, reason) }
      let back = carriedBack(batch, dead: Set(objects))
      let rest = batch.seqs.filter { !objects.contains($0) && !back.contains($0) }  // superseded values it carried
      store.settle(flushId, delivered: rest, dead: dead)
      stats.deadLettered += dead.count
      stats.retrying.subtract(batch.seqs)
      log.warn("delivery: Braze refused an object (\(reason)); it is a dead letter")
      return
    }
    store.settle(flushId, delivered: [], dead: [])
    picking.split(batch.seqs)
  }

  /// The superseded values a request carried whose newer value Braze did not take: they stay pending.
  private func carriedBack(_ batch: TrackBatch, dead: Set<UInt64>) -> Set<UInt64> {
    guard batch.seqs.count > batch.objectCount else { return [] }
    return store.items.items(seqs: batch.seqs)
      .carriedButNotReplaced(sent: Set(batch.attributeSeqs + batch.eventSeqs), dead: dead)
  }

  private func fail(reason: String, afterMs: Int?, sentAt: Double = .infinity) {
    let until = throttle.fail(nowMs: clock.now(), afterMs: afterMs, sentAt: sentAt, monotonicNow: monotonic.seconds())
    stats.lastError = reason
    stats.failingSince = stats.failingSince ?? clock.now()
    log.warn("delivery: \(reason); retrying at \(UTCTime.format(ms: until))")
  }

  private func stop(reason: String) {
    stats.configError = reason
    stats.lastError = reason
    stats.failingSince = stats.failingSince ?? clock.now()
    let until = throttle.stop(nowMs: clock.now())
    log.error(
      "delivery stopped: Braze answered \(reason); check --braze-endpoint and the API key (needs users.track)."
        + " Every item is kept; trying again at \(UTCTime.format(ms: until))")
  }
}

// MARK: - Pass

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
    sendLeased()
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
