import Dispatch
package import OutboxStore
package import OutboxSupport

/// Delivery of items that live outside the store (a fleet's stream, README "Fleet"), with the
/// store-backed `Deliverer`'s rules and parts: the same bodies (`UsersTrack`), answers (`Verdict`),
/// limiter (`Pacing`) and setbacks (`Throttle`).
///
/// The caller adds items in arrival order, each with a `seq` unique among them (the stream
/// sequence). A request takes up to `batchLimit` items, oldest first, skipping every user with a
/// request in flight or an older item held back, so one user's items reach Braze in order and never
/// two requests for one user are in flight. A 400 halves the request until the bad object is alone;
/// a retryable answer puts its items back where they were. Requests in flight follow the same
/// `ConcurrencyLimit` as the store's deliverer (adaptive unless `--braze-max-in-flight N`).
/// Each answer comes back from `collect` as an `Outcome` for the caller to settle at the source.
package final class HeldDelivery {
  package enum Outcome {
    /// 2xx: `delivered` reached Braze; `dead` were refused by name (`errors`) or alone after a 400.
    case settled(delivered: [PendingItem], dead: [(PendingItem, String)])
    /// Not sent because the lease ran out before the request left (`HTTPRequest.notAfter`): give
    /// them back. (A retryable answer, 429, 5xx or a timeout, keeps its items held and waiting, to
    /// go first after the pause.)
    case retry([PendingItem], reason: String)
    /// 401, 403, 404: the configuration is wrong; `stopReason` is set and nothing more is sent.
    case stopped([PendingItem], reason: String)
  }

  private struct Held {
    var item: PendingItem
    var user: ByteKey
    /// After a 400: at most this many items in its next request.
    var cap: Int
    var sending = false
    /// Settled and gone; the entry waits for the next compaction (`take`). A taken entry is also
    /// `sending`, so every scan for waiting items passes over it.
    var taken = false
  }

  private struct Completion: Sendable {
    var id: Int
    var batch: TrackBatch
    var result: Result<HTTPResponse, DeliveryFailure>
    var answeredAt: Double
  }

  let settings: DeliverySettings
  private let clock: Clock
  private let log: Log
  private let poster: any HTTPPoster
  private let batchLimit: Int
  private let queue = DispatchQueue(label: "push-outbox.held-delivery", attributes: .concurrent)
  private let inbox = Inbox<Completion>()
  private let wakeup = DispatchSemaphore(value: 0)
  /// Held items by seq, oldest first.
  private var held: [Held] = []
  /// Entries of `held` that were taken and not yet compacted away.
  private var takenCount = 0
  private struct Flight {
    var seqs: [UInt64]
    var users: Set<ByteKey>
    var token: Int
    var sentAt: Double
  }
  private var flights: [Int: Flight] = [:]
  private var usersInFlight: Set<ByteKey> = []
  /// Items given back (NAK) that must come back before a newer item of their user is sent:
  /// user → seq given back → wall-clock ms after which it is no longer awaited.
  private var awaited: [ByteKey: [UInt64: Int64]] = [:]
  private var pacing: Pacing
  package private(set) var limit: ConcurrencyLimit
  /// Monotonic seconds of the last moment every slot of the limit was taken (see `Deliverer`).
  private var lastFull = -Double.infinity
  private var throttle: Throttle
  private var counter = 0
  package private(set) var stopReason: String?
  package private(set) var requestsByCode: [String: Int] = [:]

  package init(
    settings: DeliverySettings, clock: Clock, log: Log, batchLimit: Int, poster: any HTTPPoster = CurlPoster()
  ) {
    self.settings = settings
    self.clock = clock
    self.log = log
    self.poster = poster
    self.batchLimit = max(1, batchLimit)
    pacing = Pacing(settings.rate)
    limit = ConcurrencyLimit(fixed: settings.maxInFlight, rate: settings.rate)
    throttle = Throttle(
      backoffMs: settings.backoffMs, maxBackoffMs: settings.maxBackoffMs,
      configErrorBackoffMs: settings.configErrorBackoffMs)
  }

  package var heldCount: Int { held.count - takenCount }
  package var inFlight: Int { flights.count }
  /// Wall-clock ms before which nothing is sent (after a setback).
  package var pausedUntil: Int64 { throttle.pausedUntil }
  package var isPaused: Bool { throttle.isPaused(clock.now()) }
  /// The seqs of every held item (in flight or waiting), for keeping them alive at the source.
  package var heldSeqs: [UInt64] { held.filter { !$0.taken }.map(\.item.seq) }

  /// Adds an item (its `seq` unique among held ones); nil when it names no user (a dead letter).
  @discardableResult
  package func add(_ item: PendingItem) -> Bool {
    guard let key = item.body.withUnsafeBytes({ UserKey.of(body: $0, item: { item }) }) else { return false }
    let user = ByteKey(key)
    if awaited[user]?.removeValue(forKey: item.seq) != nil, awaited[user]?.isEmpty == true { awaited[user] = nil }
    let entry = Held(item: item, user: user, cap: batchLimit)
    if let last = held.last, last.item.seq > item.seq {
      let index = held.firstIndex { $0.item.seq > item.seq } ?? held.count
      held.insert(entry, at: index)
    } else {
      held.append(entry)
    }
    return true
  }

  /// Removes every held item not in flight and returns it (to give back at the source). Each one's
  /// user sends nothing newer until it is added again or `untilMs` passes.
  package func takeWaiting(untilMs: Int64) -> [PendingItem] {
    let out = held.filter { !$0.sending }
    held.removeAll { !$0.sending || $0.taken }
    takenCount = 0
    expectBack(out.map(\.item), untilMs: untilMs)
    return out.map(\.item)
  }

  /// Items given back at the source: their users wait for them (see `takeWaiting`).
  package func expectBack(_ items: [PendingItem], untilMs: Int64) {
    for item in items {
      guard let key = item.body.withUnsafeBytes({ UserKey.of(body: $0, item: { item }) }) else { continue }
      awaited[ByteKey(key), default: [:]][item.seq] = untilMs
    }
  }

  // MARK: - Sending

  /// Starts every request the limits allow while this process may send: until the monotonic time
  /// `sendBy` (a fleet leader's lease, less a margin; nil: not at all). The time is checked again on
  /// the HTTP thread right before each request is handed to libcurl (`HTTPRequest.notAfter`): a process stopped (SIGSTOP) between
  /// the two sends nothing once it resumes past its lease (issue 40 #4), and its items come back as
  /// a `.retry` with no setback, to be given back to the next leader.
  package func startRequests(sendBy: Double?) {
    guard let sendBy else { return }
    while Clock.monotonicSeconds() < sendBy, stopReason == nil, !throttle.isPaused(clock.now()),
      pacing.blockedUntil(Clock.monotonicSeconds()) == nil
    {
      guard flights.count < limit.value else {
        lastFull = Clock.monotonicSeconds()
        return
      }
      guard startOne(sendBy: sendBy) else { return }
    }
  }

  /// Seconds until the limiter frees a slot, when it alone holds a request back.
  package func paceWait() -> Double? {
    pacing.blockedUntil(Clock.monotonicSeconds()).map { max(0.001, $0 - Clock.monotonicSeconds()) }
  }

  private func startOne(sendBy: Double) -> Bool {
    let now = clock.now()
    if !awaited.isEmpty {
      awaited = awaited.compactMapValues { seqs in
        let live = seqs.filter { $0.value > now }
        return live.isEmpty ? nil : live
      }
    }
    let chosen = pick()
    guard !chosen.isEmpty else { return false }
    let items = chosen.map { held[$0].item }
    let users = Set(chosen.map { held[$0].user })
    for index in chosen { held[index].sending = true }
    usersInFlight.formUnion(users)
    counter += 1
    let sentAt = Clock.monotonicSeconds()
    let token = pacing.record(sentAt)
    flights[counter] = Flight(seqs: items.map(\.seq), users: users, token: token, sentAt: sentAt)
    if flights.count >= self.limit.value { lastFull = sentAt }
    send(counter, items, sendBy: sendBy)
    return true
  }

  /// The indices of the next request's items: the oldest waiting ones whose users have nothing in
  /// flight and no older item given back, up to the batch limit (or a halved request's cap).
  private func pick() -> [Int] {
    var waiting: Set<ByteKey> = []  // users with an older item given back (`awaited`)
    var chosen: [Int] = []
    var limit = batchLimit
    // Fields are read in place: a copy of each entry would retain its body and user key.
    for index in held.indices where !held[index].sending {
      if usersInFlight.contains(held[index].user) || waiting.contains(held[index].user) { continue }
      if !awaited.isEmpty, let seqs = awaited[held[index].user],
        seqs.keys.contains(where: { $0 < held[index].item.seq })
      {
        waiting.insert(held[index].user)
        continue
      }
      if chosen.count + 1 > min(limit, held[index].cap) { break }
      limit = min(limit, held[index].cap)
      chosen.append(index)
    }
    return chosen
  }

  private func send(_ id: Int, _ items: [PendingItem], sendBy: Double) {
    guard let url = settings.url, let key = settings.apiKey else { return }
    let (poster, inbox, wakeup) = (poster, inbox, wakeup)
    let (timeout, connect) = (settings.timeoutMs, settings.connectTimeoutMs)
    queue.async {
      var batch =
        UsersTrack.batches(
          items, superseded: items.supersededSeqs, defaultUser: nil, limit: Int.max, mode: .perArray
        ).first ?? TrackBatch()
      batch.seqs = items.map(\.seq)
      var body: [UInt8] = []
      batch.appendBody(to: &body)
      var request = HTTPRequest(url: url, bearer: key, body: body, timeoutMs: timeout, connectTimeoutMs: connect)
      request.notAfter = sendBy
      let sent = batch
      poster.start(request) { result in
        inbox.put(Completion(id: id, batch: sent, result: result, answeredAt: Clock.monotonicSeconds()))
        wakeup.signal()
      }
    }
  }

  /// Blocks until an answer arrives or `seconds` pass.
  package func waitForAnswer(seconds: Double) { _ = wakeup.wait(timeout: .now() + seconds) }

  // MARK: - Answers

  /// The answers that have arrived, applied: what to settle at the source.
  package func collect() -> [Outcome] {
    inbox.takeAll().compactMap(apply)
  }

  private func apply(_ completion: Completion) -> Outcome? {
    guard let flight = flights.removeValue(forKey: completion.id) else { return nil }
    usersInFlight.subtract(flight.users)
    pacing.answered(flight.token, at: completion.answeredAt)
    if let signal = ConcurrencyLimit.signal(completion.result) {
      limit.record(
        signal, roundTrip: completion.answeredAt - flight.sentAt, atLimit: lastFull >= flight.sentAt,
        now: completion.answeredAt)
    }
    switch completion.result {
    case .success(let response): requestsByCode[String(response.status), default: 0] += 1
    case .failure: requestsByCode["error", default: 0] += 1
    }
    let batch = completion.batch
    if case .failure(.notSent(let why)) = completion.result { return .retry(take(flight.seqs), reason: why) }
    switch Verdict.of(completion.result, batch, nowMs: clock.now(), key: settings.apiKey) {
    case .delivered(let dead):
      throttle.delivered()
      let back = carriedBack(flight.seqs, batch, dead: Set(dead.keys))
      requeue(Array(back))
      let items = take(flight.seqs.filter { !back.contains($0) })
      return .settled(
        delivered: items.filter { dead[$0.seq] == nil }, dead: items.compactMap { i in dead[i.seq].map { (i, $0) } })
    case .retry(let afterMs, let reason):
      let until = throttle.fail(nowMs: clock.now(), afterMs: afterMs, sentAt: flight.sentAt)
      log.warn("fleet delivery: \(reason); retrying at \(UTCTime.format(ms: until))")
      requeue(flight.seqs)
      return nil
    case .split(let reason):
      let objects = Set(batch.attributeSeqs + batch.eventSeqs)
      guard objects.count <= 1 else {
        halve(flight.seqs)
        return nil
      }
      let back = carriedBack(flight.seqs, batch, dead: objects)
      requeue(Array(back))
      let items = take(flight.seqs.filter { !back.contains($0) })
      log.warn("fleet delivery: Braze refused an object (\(reason)); it is a dead letter")
      return .settled(
        delivered: items.filter { !objects.contains($0.seq) },
        dead: items.filter { objects.contains($0.seq) }.map { ($0, reason) })
    case .stop(let reason):
      throttle.stop(nowMs: clock.now())
      stopReason = reason
      return .stopped(take(flight.seqs), reason: reason)
    }
  }

  /// The superseded values a request carried whose newer value Braze did not take: they stay held.
  private func carriedBack(_ seqs: [UInt64], _ batch: TrackBatch, dead: Set<UInt64>) -> Set<UInt64> {
    guard seqs.count > batch.objectCount else { return [] }
    return seqs.compactMap(index(of:)).map { held[$0].item }
      .carriedButNotReplaced(sent: Set(batch.attributeSeqs + batch.eventSeqs), dead: dead)
  }

  /// Removes the items of `seqs` from the held ones and returns them. Each is found by binary search
  /// (`held` is in seq order) and marked taken; the taken entries are dropped together once they are
  /// half of `held`, so an answer costs its own items, not a pass over everything held.
  private func take(_ seqs: [UInt64]) -> [PendingItem] {
    var out: [PendingItem] = []
    for index in seqs.compactMap(index(of:)) {
      out.append(held[index].item)
      held[index].taken = true
      held[index].sending = true
      takenCount += 1
    }
    if takenCount > 64 && takenCount * 2 > held.count {
      held.removeAll { $0.taken }
      takenCount = 0
    }
    return out
  }

  /// The index in `held` of the item with this seq (not a taken one).
  private func index(of seq: UInt64) -> Int? {
    var (low, high) = (0, held.count)
    while low < high {
      let middle = (low + high) / 2
      if held[middle].item.seq < seq { low = middle + 1 } else { high = middle }
    }
    while low < held.count && held[low].item.seq == seq {
      if !held[low].taken { return low }
      low += 1
    }
    return nil
  }

  /// A 400 for the whole request: its items go again in requests half as large.
  private func halve(_ seqs: [UInt64]) {
    requeue(seqs, cap: max(1, (seqs.count + 1) / 2))
  }

  /// Puts a request's items back among the waiting ones, where they were: each is again the oldest
  /// of its user, so the next pick (after the pause, for a retryable answer) takes it before
  /// anything newer of that user. They stay held at the source (kept alive, never given back for a
  /// mere setback), so no redelivery can reorder them and no retry counts against `max_deliver`.
  private func requeue(_ seqs: [UInt64], cap: Int? = nil) {
    for index in seqs.compactMap(index(of:)) {
      held[index].sending = false
      if let cap { held[index].cap = cap }
    }
  }
}
