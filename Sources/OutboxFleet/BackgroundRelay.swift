import OutboxDomain
package import OutboxJSON
package import OutboxNATS
package import OutboxServer
import OutboxStore
import OutboxSupport

/// `--relay nats://HOST:PORT` while serving: what `push-outbox relay` does, in the background. The
/// loop's side (`Service.tick`, never blocking) leases a round durably, hands its messages to the
/// `RelayWorker` thread, and settles the acks it hands back, with `RelayRounds`, the code the
/// one-shot uses. Saves keep being answered whatever NATS does; items stay local until acked.
package final class BackgroundRelay: BackgroundWork {
  private let worker: RelayWorker
  private let to: String
  private let stream: String
  /// `--relay-default-user`: the user for items saved without one.
  private let defaultUser: UserIdentifier?
  private var rounds: RelayRounds?
  /// Rounds handed to the worker, oldest first: at most `window`.
  private var outstanding: [(id: UInt64, round: RelayRound)] = []
  /// Rounds in flight at once: the next one is leased and built while the worker publishes.
  let window: Int
  private var jobs: UInt64 = 0
  /// No round before this (monotonic seconds): after a round that stalled (stream full, refused).
  private var retryAt = 0.0
  private var backoff: NATSBackoff
  /// The store's version when the last pick found nothing: no new pick until it changes.
  private var emptyAt: UInt64?
  private var lastError: String?
  private var lastPublishAt: Int64?
  private var state = RelayState.connecting
  /// How long `finish` waits for a round in flight before giving its items back.
  let exitWaitSeconds: Double
  /// A round's lease: longer than a publish and its retries, so it never ends while in flight.
  private let leaseMs: Int64

  init(
    worker: RelayWorker, to: String, stream: String, defaultUser: UserIdentifier? = nil, exitWaitSeconds: Double = 1,
    backoffFirst: Double = 0.1, window: Int = 2
  ) {
    self.worker = worker
    self.defaultUser = defaultUser
    self.window = window
    self.to = to
    self.stream = stream
    self.exitWaitSeconds = exitWaitSeconds
    self.backoff = NATSBackoff(first: backoffFirst, limit: 5)
    self.leaseMs = Int64(worker.publishSeconds * 1000) + 60_000
  }

  /// The relay a serving process starts for `--relay`, its thread running.
  package static func start(_ options: RelayOptions, auth: NATSAuth?) -> BackgroundRelay? {
    guard let address = options.to else { return nil }
    var settings = NATSOptions(address: address, auth: auth)
    settings.allowPlaintext = options.allowPlaintext
    settings.name = "push-outbox --relay"
    let worker = RelayWorker(publisher: NATSRelayPublisher(settings: settings, options: options))
    worker.start()
    let defaultUser = options.defaultUser.flatMap { try? RelayOptions.parseUser($0, flag: "--relay-default-user") }
    return BackgroundRelay(worker: worker, to: address.description, stream: options.stream, defaultUser: defaultUser)
  }

  package func tick(service: Service, busy: Bool) {
    if rounds == nil {
      rounds = RelayRounds(service: service, stream: stream, defaultUser: defaultUser)
      rounds?.releaseLeftovers()
    }
    if let error = worker.takeError() { lastError = error }
    let snapshot = worker.snapshot
    state = snapshot.state
    while let (id, round) = outstanding.first, let result = worker.takeResult(id) {
      outstanding.removeFirst()
      settle(round, result.acks, service)
    }
    while outstanding.count < window, state == .connected, Clock.monotonicSeconds() >= retryAt,
      service.store.version != emptyAt
    {
      guard startRound(service, maxPayload: snapshot.maxPayload) else { break }
    }
  }

  /// Leases and hands over one round; false when there was none to lease.
  private func startRound(_ service: Service, maxPayload: Int) -> Bool {
    let round: RelayRound?
    do throws(NATSError) {
      round = try rounds?.lease(max: RelayRounds.roundSize, leaseMs: leaseMs, maxPayload: maxPayload)
    } catch {
      stalled(error.description)
      return false
    }
    guard let round else {
      emptyAt = service.store.version
      return false
    }
    guard !round.messages.isEmpty else {  // only dead letters
      settle(round, [], service)
      return true
    }
    jobs += 1
    let after = outstanding.last?.id
    outstanding.append((jobs, round))
    worker.submit(RelayWorker.Job(id: jobs, messages: round.messages, after: after))
    return true
  }

  private func settle(_ round: RelayRound, _ acks: [PublishAck?], _ service: Service) {
    guard !acks.isEmpty || round.messages.isEmpty else {
      // Not published (behind a round not wholly acked), or the publish failed and the worker
      // said why: pending again, and no new error of its own.
      rounds?.settle(round, acks: [])
      return
    }
    guard let outcome = rounds?.settle(round, acks: acks) else { return }
    switch outcome {
    case .done, .progress:
      if acks.contains(where: { $0 != nil }) { lastPublishAt = service.clock.now() }
      backoff.reset()
    case .stalled(let reason): stalled(reason)
    }
  }

  private func stalled(_ reason: String) {
    lastError = reason
    retryAt = Clock.monotonicSeconds() + backoff.next()
  }

  package func pollTimeoutMs() -> Int32 {
    if !outstanding.isEmpty { return 5 }  // the acks come from the thread
    if state != .connected { return 100 }
    let wait = retryAt - Clock.monotonicSeconds()
    return wait > 0 ? Int32(min(wait * 1000 + 1, 60_000)) : -1
  }

  package func finish(service: Service) {
    worker.stop()
    let until = Clock.monotonicSeconds() + exitWaitSeconds
    for (id, round) in outstanding {
      if let result = worker.waitResult(id, seconds: max(0, until - Clock.monotonicSeconds())) {
        settle(round, result.acks, service)
      } else {
        rounds?.release(round)  // unacked: pending again, published again (same Nats-Msg-Id) next time
      }
    }
    outstanding.removeAll()
  }

  package func statusJSON(nowMs: Int64) -> JSONValue {
    let counts = rounds?.counts ?? RelayCounts()
    if let error = worker.takeError() { lastError = error }
    return .object([
      JSONMember("to", .string(to)),
      JSONMember("stream", .string(stream)),
      JSONMember("state", .string(worker.snapshot.state.rawValue)),
      JSONMember("published", .int(Int64(counts.published))),
      JSONMember("duplicates", .int(Int64(counts.duplicates))),
      JSONMember("deadLettered", .int(Int64(counts.deadLettered + counts.tooLarge))),
      JSONMember("inFlight", .int(Int64(outstanding.reduce(0) { $0 + $1.round.messages.count }))),
      JSONMember("lastError", lastError.map(JSONValue.string) ?? .null),
      JSONMember("lastPublishAt", lastPublishAt.map { .string(UTCTime.format(ms: $0)) } ?? .null),
    ])
  }
}
