import Dispatch
package import OutboxDomain
package import OutboxJSON
package import OutboxStore
package import OutboxSupport

/// Delivers pending items to Braze's `/users/track`, at least once, in per-user order.
///
/// The request loop owns it and the store. For each request it leases the batch's items durably
/// (`Lease(origin: .delivery)`, committed before anything is sent), hands the HTTP call to a
/// background queue, and applies the answer on the loop thread when `collect` finds it in the inbox:
/// ack after a 2xx, dead letters for the objects Braze named, release with backoff otherwise.
/// No two requests in flight hold the same user, so a later value never overtakes an earlier one.
package final class Deliverer {
  struct Flight {
    var seqs: [UInt64]
    var users: Set<UserNumber>
    /// Its slot in the limiter.
    var pacingToken = 0
  }

  struct Completion: Sendable {
    var flushId: String
    /// The body that was sent, built on the background queue from the flight's cut.
    var batch: TrackBatch
    var result: Result<HTTPResponse, DeliveryFailure>
    /// Monotonic seconds when the answer (or the failure) came back.
    var answeredAt: Double
  }

  let settings: DeliverySettings
  let store: Store
  let clock: Clock
  let log: Log
  let batchLimit: Int
  let mode: TrackBatchMode
  private let poster: any HTTPPoster
  private let queue = DispatchQueue(label: "push-outbox.delivery", attributes: .concurrent)
  private let inbox = Inbox<Completion>()
  private let wakeup = DispatchSemaphore(value: 0)
  var flights: [String: Flight] = [:]
  var busyUsers: Set<UserNumber> = []
  /// Halves of batches Braze refused with a 400, sent before anything else.
  var splits: [[UInt64]] = []
  var pacing: Pacing
  var failures = 0
  /// Wall-clock ms before which nothing is sent (after a failure).
  package var pausedUntil: Int64 = 0
  package var stats = DeliveryStats()
  /// Users of items looked at, by seq, as numbers handed out by `users`.
  var userOfSeq: [UInt64: UserNumber] = [:]
  var users = UserNumbers()
  /// After a scan found nothing to send: nothing is scanned again before this monotonic time
  /// unless an answer arrives or the item count moves, so a loop tick costs nothing while every
  /// waiting item's user is busy. A pass (`runPass`) always scans.
  var quietUntil = 0.0
  /// The answers applied and the item count when that scan ran.
  var quietSeen: (changes: Int, count: Int)?
  /// While the loop is busy with requests, no send starts before this monotonic time (the local
  /// stub benchmark: at 20 ms, 1M saves ran 0.84× as fast; at 100 ms, within noise).
  var nextBusyStart = 0.0
  var busyStartSeconds = 0.1
  /// Bumped by every answer applied: the items or users a scan saw may have changed.
  var changes = 0
  /// Failures and stops so far: a pass stops starting requests after its first one.
  var setbacks = 0
  private var counter = 0

  package init(
    settings: DeliverySettings, store: Store, clock: Clock, log: Log, batchLimit: Int, mode: TrackBatchMode,
    poster: any HTTPPoster = CurlPoster()
  ) {
    self.settings = settings
    self.store = store
    self.clock = clock
    self.log = log
    self.batchLimit = batchLimit
    self.mode = mode
    self.poster = poster
    self.pacing = Pacing(settings.rate)
    nextBusyStart = Clock.monotonicSeconds() + busyStartSeconds  // requests waiting at start go first
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

  // MARK: - Starting requests

  enum Start {
    case started(objects: Int)
    case nothingToSend
    case waiting
  }

  /// Starts one request if the limits allow and something can be sent; `maxObjects` caps its size.
  func startOne(maxObjects: Int) -> Start {
    guard flights.count < settings.maxInFlight, clock.now() >= pausedUntil,
      pacing.blockedUntil(Clock.monotonicSeconds()) == nil
    else { return .waiting }
    guard let cut = nextCut(maxObjects: maxObjects) else { return flights.isEmpty ? .nothingToSend : .waiting }
    counter += 1
    let now = clock.now()
    let flushId = "delivery-\(now)-\(counter)"
    let expires = now + Int64(settings.timeoutMs) * 2 + 60_000
    store.lease(Lease(flushId: flushId, seqs: cut.seqs, expiresAt: expires, note: [], origin: .delivery))
    if let error = store.commit() {  // nothing is sent before its lease is durable
      _ = try? store.release(flushId)
      fail(reason: "cannot record the lease: \(error)", afterMs: nil)
      return .waiting
    }
    guard cut.objects > 0 else {  // only superseded values: nothing to send
      store.settle(flushId, delivered: cut.seqs, dead: [])
      _ = store.commit()
      return .started(objects: 0)
    }
    let token = pacing.record(Clock.monotonicSeconds())
    flights[flushId] = Flight(seqs: cut.seqs, users: cut.users, pacingToken: token)
    busyUsers.formUnion(cut.users)
    send(flushId, cut)
    return .started(objects: cut.objects)
  }

  /// Builds the body and posts it on the background queue; the answer comes back through the inbox.
  private func send(_ flushId: String, _ cut: Cut) {
    guard let url = settings.url, let key = settings.apiKey else { return }
    let (poster, inbox, wakeup) = (poster, inbox, wakeup)
    let (timeout, connect) = (settings.timeoutMs, settings.connectTimeoutMs)
    queue.async {
      let batch =
        UsersTrack.batches(cut.items, superseded: cut.superseded, defaultUser: nil, limit: Int.max, mode: .perArray)
        .first ?? TrackBatch()
      var body: [UInt8] = []
      batch.body.encodeJSON(into: &body)
      let request = HTTPRequest(url: url, bearer: key, body: body, timeoutMs: timeout, connectTimeoutMs: connect)
      let result = poster.post(request)
      inbox.put(Completion(flushId: flushId, batch: batch, result: result, answeredAt: Clock.monotonicSeconds()))
      wakeup.signal()
    }
  }

  // MARK: - Collecting answers

  /// Applies every answer that has arrived. Returns how many.
  @discardableResult
  func collect() -> Int {
    let done = inbox.takeAll()
    for completion in done { apply(completion) }
    if !done.isEmpty { changes += 1 }
    if !done.isEmpty, let error = store.commit() { log.error("delivery: cannot record results: \(error)") }
    return done.count
  }

  /// Blocks until an answer arrives or `seconds` pass.
  func waitForAnswer(seconds: Double) {
    _ = wakeup.wait(timeout: .now() + seconds)
  }

  func fail(reason: String, afterMs: Int?) {
    failures += 1
    setbacks += 1
    let backoff = Backoff.delayMs(failures: failures, baseMs: settings.backoffMs, capMs: settings.maxBackoffMs)
    pausedUntil = clock.now() + Int64(max(backoff, afterMs ?? 0))
    stats.lastError = reason
    log.warn("delivery: \(reason); retrying at \(UTCTime.format(ms: pausedUntil))")
  }
}

/// Counters for `status.delivery` and the results of a pass.
package struct DeliveryStats: Sendable {
  package var delivered = 0
  package var deadLettered = 0
  /// Seqs released after a failed attempt and not yet delivered.
  package var retrying: Set<UInt64> = []
  package var lastError: String?
  package var configError: String?
}
