package import OutboxDelivery
import OutboxJSON
package import OutboxNATS
import OutboxStore
import OutboxSupport

/// One `push-outbox deliver --from`: a durable pull consumer on the stream, leader election, and
/// `HeldDelivery` for the requests (Protocol/fleet.md). One thread owns the connection; the HTTP
/// requests run on delivery's background queue. `BackgroundFleet` runs one on a thread of its own
/// under `--deliver --from`.
package final class FleetSession {
  private let options: FleetOptions
  private let nats: NATSOptions
  private let settings: DeliverySettings
  private let engine: HeldDelivery
  private var js: JetStream?
  private var consumer: NATSPullConsumer?
  private var leader: FleetLeader?
  /// The message behind each held item, by stream sequence.
  private var messages: [UInt64: FetchedMessage] = [:]
  private var nextKeepAlive = 0.0
  /// Wall-clock ms until which messages given back may still be on their way back.
  private var givenBackUntil: Int64 = 0
  private var standbySince = Clock.monotonicSeconds()
  /// Monotonic seconds before which a new leader fetches nothing (see `startLeading`).
  private var fetchFrom = 0.0
  private var delivered = 0
  private var deadLettered = 0
  private var givenBack = 0
  private(set) var problem: String?
  /// Whether to stop: a signal for `deliver --from`; the serving process's exit for `--deliver --from`.
  var stopRequested: @Sendable () -> Bool = { StopRequest.isRequested }
  /// Where a serving process reads this session's state (`status.delivery.fleet`).
  var report: FleetReport?
  private var nextStreamInfo = 0.0

  static let consumerName = "push-outbox-deliver"
  /// Deliveries of one message before it becomes a dead letter (the consumer's `max_deliver`).
  static let maxDeliver = 20
  /// Room for the messages a dead leader held (until their AckWait) and the new leader's window.
  static let maxAckPending = 20_000
  /// Wall-clock ms a one-shot waits out a pause before it exits with the rest left in the stream.
  static let maxWaitMs: Int64 = 30_000

  package init(options: FleetOptions, nats: NATSOptions, settings: DeliverySettings, batchLimit: Int) {
    self.options = options
    self.nats = nats
    self.settings = settings
    engine = HeldDelivery(settings: settings, clock: .system, log: Log(level: .warn), batchLimit: batchLimit)
  }

  /// Longer than the Braze timeout; `+WPI` restarts it every third while an item is held.
  private var ackWaitSeconds: Int64 { Int64((Double(settings.timeoutMs) / 1000).rounded(.up)) + 2 }
  /// Items held at once: enough for every request the concurrency limit allows now, twice.
  private var window: Int { min(engine.limit.value * 75 * 2, Self.maxAckPending / 2) }
  private var deadStream: String { options.stream + "_DEAD" }

  package var summary: String {
    "delivered \(delivered), dead-lettered \(deadLettered) (to \(deadStream)), given back \(givenBack)"
      + (problem.map { "; stopped: " + $0 } ?? "")
  }

  /// Runs until the stream is empty (one-shot) or a signal (`--follow`).
  package func run() -> SessionResult {
    var backoff = NATSBackoff()
    while !stopRequested() {
      do throws(NATSError) {
        try connect()
        if let code = try step() { return code }
        backoff.reset()
        continue
      } catch {
        disconnect(error.description)
        if error.kind == .refused || error.kind == .auth {
          problem = error.description
          return .failure
        }
        Log.stderr("push-outbox deliver: NATS: \(error.description); reconnecting")
      }
      let until = Clock.monotonicSeconds() + backoff.next()
      while Clock.monotonicSeconds() < until && !stopRequested() { usleep(20_000) }
    }
    return shutdown()
  }

  // MARK: - Connection

  private func connect() throws(NATSError) {
    guard js == nil else { return }
    let connection = try NATSConnection(nats)
    let stream = JetStream(connection)
    do throws(NATSError) {
      let deadline = Clock.monotonicSeconds() + 5
      for name in [options.stream, deadStream] {
        let shape = StreamSettings(name: name, subjects: [name + ".*"], maxBytes: options.maxBytes)
        try stream.ensureStream(shape, deadline: deadline)
      }
      let pull = NATSPullConsumer(stream, streamName: options.stream, name: Self.consumerName)
      try pull.ensure(
        ackWaitSeconds: ackWaitSeconds, maxDeliver: Self.maxDeliver, maxAckPending: Self.maxAckPending,
        deadline: deadline)
      let election = FleetLeader(
        kv: NATSKeyValue(stream, bucket: options.stream + "_LEADER"), leaseSeconds: options.leaseSeconds,
        pid: getpid())
      try election.ensureBucket(deadline: deadline)
      (js, consumer, leader) = (stream, pull, election)
      standbySince = Clock.monotonicSeconds()
    } catch {
      connection.close()
      throw error
    }
  }

  /// The connection is gone: leadership with it; held items not in flight come back after AckWait.
  private func disconnect(_ why: String) {
    report?.update { snapshot in
      (snapshot.connected, snapshot.role, snapshot.leaderSince, snapshot.lastError) = (false, .standby, nil, why)
    }
    if var election = leader, let change = election.lose("NATS: " + why) { logRole(change) }
    js?.connection.close()
    (js, consumer, leader) = (nil, nil, nil)
    for item in engine.takeWaiting(untilMs: 0) { messages[item.seq] = nil }
  }

  // MARK: - One step

  /// Elects, settles answers, fetches and starts requests; an exit code once the run is over.
  private func step() throws(NATSError) -> SessionResult? {
    guard let js, let consumer, var election = leader else { return nil }
    if let change = try election.tick() {
      logRole(change)
      if change.0 == .leader { try startLeading(js) }
    }
    leader = election
    if let report { publish(report, js, election) }
    for outcome in engine.collect() { try settle(outcome, leading: election.isLeader) }
    if let reason = engine.stopReason {
      problem =
        "Braze answered \(reason); check --braze-endpoint and the API key (needs users.track)."
        + " Every message stays in the stream"
      return shutdown()
    }
    let now = Clock.system.now()
    if !election.isLeader {
      if engine.heldCount > engine.inFlight { giveBack(untilMs: now) }
      try js.connection.flush(deadline: Clock.monotonicSeconds() + 2)
      if !options.follow && Clock.monotonicSeconds() - standbySince > 2 * options.leaseSeconds + 1 {
        problem = "another deliverer holds the lease of \(options.stream)_LEADER"
        return .failure
      }
      engine.waitForAnswer(seconds: max(0.005, min(0.05, election.nextAttemptAt - Clock.monotonicSeconds())))
      return nil
    }
    standbySince = Clock.monotonicSeconds()
    if engine.isPaused {  // held items wait, kept alive, to go first once the pause ends
      if !options.follow && engine.inFlight == 0 && engine.pausedUntil - now > Self.maxWaitMs {
        return try finishOneShot(js)
      }
    } else if engine.heldCount < window && Clock.monotonicSeconds() >= fetchFrom {
      let busy = engine.heldCount > 0 || engine.inFlight > 0
      let idle = min(0.25, options.leaseSeconds / 6)
      let fetched = try consumer.fetch(
        batch: window - engine.heldCount, expiresSeconds: idle, noWait: busy,
        deadline: Clock.monotonicSeconds() + idle + 0.25)  // a pull the server holds (MaxAckPending) ends here
      for message in fetched { try admit(message) }
      if fetched.isEmpty && !busy && !options.follow, let code = try finishOneShot(js) { return code }
    }
    engine.startRequests(sendBy: leader?.sendBy)
    keepAlive(consumer)
    try js.connection.flush(deadline: Clock.monotonicSeconds() + 2)
    if engine.inFlight > 0 {
      engine.waitForAnswer(seconds: 0.01)
    } else if engine.isPaused || engine.heldCount > 0 || Clock.monotonicSeconds() < fetchFrom {
      engine.waitForAnswer(seconds: min(engine.paceWait() ?? 0.02, 0.05))
    }
    return nil
  }

  /// A new leader sends nothing for one `--braze-rate` window: the last leader may have sent up
  /// to its end, and the fleet's rate counts both. One finding messages another deliverer fetched
  /// and never settled (it died) fetches nothing for one AckWait: the server then redelivers those
  /// first, so a user's newer messages never overtake them. After a clean stop there are none.
  private func startLeading(_ js: JetStream) throws(NATSError) {
    fetchFrom = Clock.monotonicSeconds() + settings.rate.seconds
    let info = try js.api(
      "CONSUMER.INFO.\(options.stream).\(Self.consumerName)", .object([]), deadline: Clock.monotonicSeconds() + 2)
    let pending = info["num_ack_pending"]?.intValue ?? 0
    guard pending > 0, engine.heldCount == 0 else { return }
    // The consumer's own AckWait: another deliverer may have created it with another timeout.
    let ackWait = Double(info["config"]?["ack_wait"]?.intValue ?? ackWaitSeconds * 1_000_000_000) / 1e9
    fetchFrom = max(fetchFrom, Clock.monotonicSeconds() + ackWait)
    Log.stderr(
      "push-outbox deliver: \(pending) messages wait for their AckWait (\(ackWait) s) from the last leader;"
        + " they go first")
  }

  /// A fetched message becomes a held item (its seq the stream sequence), or a dead letter.
  private func admit(_ message: FetchedMessage) throws(NATSError) {
    let seq = message.streamSequence
    guard messages[seq] == nil else {  // redelivered while held: keep the newer ack subject
      messages[seq] = message
      return
    }
    guard let value = try? JSONReader.parse(message.payload, maxDepth: 1000),
      var item = try? PendingItem(decoding: value)
    else { return try deadLetter([(message, "not_an_item")]) }
    item.seq = seq
    messages[seq] = message
    guard engine.add(item) else {
      messages[seq] = nil
      return try deadLetter([(message, "no_identifier")])
    }
  }

  // MARK: - Ending

  /// The one-shot found nothing to fetch: done when the stream is empty, else 1 with the count.
  private func finishOneShot(_ js: JetStream) throws(NATSError) -> SessionResult? {
    let left = try js.streamState(options.stream, deadline: Clock.monotonicSeconds() + 5)?.messages ?? 0
    if left == 0 { return shutdown() }
    if Clock.system.now() < givenBackUntil + ackWaitSeconds * 1000
      && engine.pausedUntil - Clock.system.now()
        <= Self.maxWaitMs
    {
      return nil  // given back a moment ago: they come again
    }
    problem = "\(left) messages stay in the stream \(options.stream)"
    let code = shutdown()
    return code == .success ? .failure : code
  }

  /// Stops sending, waits for requests in flight (at most the Braze timeout), settles their
  /// answers, gives back the rest and closes the connection.
  private func shutdown() -> SessionResult {
    let deadline = Clock.monotonicSeconds() + Double(settings.timeoutMs) / 1000 + 0.5
    while engine.inFlight > 0 && Clock.monotonicSeconds() < deadline {
      engine.waitForAnswer(seconds: 0.05)
      for outcome in engine.collect() { try? settle(outcome, leading: leader?.isLeader == true) }
    }
    giveBack(untilMs: Clock.system.now())
    try? js?.connection.flush(deadline: Clock.monotonicSeconds() + 2)
    js?.connection.close()
    js = nil
    if stopRequested() && problem == nil && !options.follow { problem = "stopped by a signal" }
    return problem == nil ? .success : .failure
  }

  /// The state `status.delivery.fleet` shows; the stream's size read every 2 s.
  private func publish(_ report: FleetReport, _ js: JetStream, _ election: FleetLeader) {
    var state: (messages: Int64, bytes: Int64)?
    if Clock.monotonicSeconds() >= nextStreamInfo {
      nextStreamInfo = Clock.monotonicSeconds() + 2
      state = try? js.streamState(options.stream, deadline: Clock.monotonicSeconds() + 1)
    }
    report.update { snapshot in
      snapshot.connected = true
      snapshot.role = election.isLeader ? .leader : .standby
      snapshot.leaderSince = election.isLeader ? election.leaderSince : nil
      if let state { (snapshot.messages, snapshot.bytes) = (state.messages, state.bytes) }
      (snapshot.delivered, snapshot.deadLettered, snapshot.givenBack) = (delivered, deadLettered, givenBack)
    }
  }

  private func logRole(_ change: (FleetLeader.Role, String)) {
    Log.stderr("push-outbox deliver: role \(change.0.rawValue): \(change.1)")
  }

  // MARK: - Settling at the stream: acks, dead letters, messages given back, keeping held ones alive

  /// Applies one answer at the stream: ack, dead letter, or give back with the pause as delay.
  /// Objects Braze refused become dead letters only while this deliverer leads; one that lost its
  /// lease (a pause past it, a lost connection) gives them back instead, and the next leader sends
  /// them again and stores their dead letters (issue 40 #3). What Braze took is acked either way.
  private func settle(_ outcome: HeldDelivery.Outcome, leading: Bool) throws(NATSError) {
    guard consumer != nil else { return }
    switch outcome {
    case .settled(let done, let dead):
      for item in done { messages.removeValue(forKey: item.seq).map { consumer?.ack($0) } }
      delivered += done.count
      guard leading else { return nak(dead.map(\.0), untilMs: Clock.system.now()) }
      try deadLetter(dead.compactMap { pair in messages[pair.0.seq].map { ($0, pair.1) } })
    case .retry(let items, let reason):
      if leading {
        let last = items.filter { (messages[$0.seq]?.deliveries ?? 0) >= Self.maxDeliver }
        try deadLetter(last.compactMap { i in messages[i.seq].map { ($0, "max_deliveries: " + reason) } })
      }
      let rest = items.filter { messages[$0.seq] != nil }
      engine.expectBack(rest, untilMs: engine.pausedUntil + ackWaitSeconds * 1000)
      nak(rest, untilMs: engine.pausedUntil)
    case .stopped(let items, _):
      nak(items, untilMs: Clock.system.now())
    }
  }

  /// Every held item not in flight goes back to the stream, redelivered from `untilMs`.
  private func giveBack(untilMs: Int64) {
    nak(engine.takeWaiting(untilMs: untilMs + ackWaitSeconds * 1000), untilMs: untilMs)
  }

  /// Gives items back to the stream. A message at its last delivery (`maxDeliver`) would never be
  /// delivered again, and would stay in the stream unseen: it becomes a dead letter instead.
  private func nak(_ items: [PendingItem], untilMs: Int64) {
    guard let consumer else { return }
    let last = items.compactMap { item in
      messages[item.seq].flatMap { $0.deliveries >= Self.maxDeliver ? ($0, "max_deliveries: given back") : nil }
    }
    if !last.isEmpty { try? deadLetter(last) }
    let delay = Double(max(0, untilMs - Clock.system.now())) / 1000
    var count = 0
    for item in items {
      guard let message = messages.removeValue(forKey: item.seq) else { continue }
      consumer.nak(message, delaySeconds: delay)
      count += 1
    }
    givenBack += count
    givenBackUntil = max(givenBackUntil, untilMs)
  }

  /// Publishes each message with its reason to `<stream>_DEAD.<shard>` and acks it once the dead
  /// stream's ack says it is stored there (the original is never acked before); one the dead stream
  /// did not take stays held (`messages`), to be given back. A failure of the connection leaves them
  /// unacked: the server delivers them again after AckWait.
  private func deadLetter(_ pairs: [(FetchedMessage, String)]) throws(NATSError) {
    guard !pairs.isEmpty, let js, let consumer else { return }
    let outgoing = pairs.map { message, reason in
      var payload = Array(message.payload.dropLast(message.payload.last == UInt8(ascii: "}") ? 1 : 0))
      payload.append(contentsOf: #","deadReason":"#.utf8)
      JSONValue.string(reason).encodeJSON(into: &payload)
      payload.append(UInt8(ascii: "}"))
      let shard = message.subject.split(separator: ".").last.map(String.init) ?? "0"
      let id = message.headers.first { $0.name.lowercased() == "nats-msg-id" }?.value ?? String(message.streamSequence)
      return OutgoingMessage(subject: deadStream + "." + shard, messageID: id, payload: payload)
    }
    let acks: [PublishAck?]
    do throws(NATSError) {
      acks = try js.publish(outgoing, to: deadStream, deadline: Clock.monotonicSeconds() + 5)
    } catch {
      for (message, _) in pairs { messages[message.streamSequence] = nil }
      throw error
    }
    for ((message, reason), ack) in zip(pairs, acks) {
      messages[message.streamSequence] = nil
      if case .stored? = ack {
        consumer.ack(message)
        deadLettered += 1
        Log.stderr("push-outbox deliver: a dead letter in \(deadStream): \(reason)")
      } else {
        consumer.nak(message, delaySeconds: 1)
        givenBack += 1
      }
    }
  }

  /// `+WPI` for every held item about every third of AckWait.
  private func keepAlive(_ consumer: NATSPullConsumer) {
    let now = Clock.monotonicSeconds()
    guard now >= nextKeepAlive else { return }
    nextKeepAlive = now + Double(ackWaitSeconds) / 3
    for seq in engine.heldSeqs { messages[seq].map(consumer.inProgress) }
  }
}
