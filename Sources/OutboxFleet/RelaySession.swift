package import OutboxDomain
package import OutboxNATS
package import OutboxServer
import OutboxStore
import OutboxSupport

/// The rounds of one `push-outbox relay`: lease, publish, settle (see `RelayOptions`); the store's
/// side of each round is `RelayRounds`, shared with `--relay` while serving.
package struct RelaySession {
  let service: Service
  let nats: NATSOptions
  let options: RelayOptions
  private var rounds: RelayRounds
  private var stream: JetStream?
  private var problem: String?

  package init(service: Service, nats: NATSOptions, options: RelayOptions, defaultUser: UserIdentifier?) {
    self.service = service
    self.nats = nats
    self.options = options
    self.rounds = RelayRounds(service: service, stream: options.stream, defaultUser: defaultUser)
  }

  package var summary: String {
    let store = service.store
    let counts = rounds.counts
    var text = "published \(counts.published) (\(counts.duplicates) already in the stream)"
    if counts.deadLettered > 0 {
      text += ", \(counts.deadLettered) without an identifier moved to the dead letters (no_identifier)"
    }
    if counts.tooLarge > 0 {
      text +=
        ", \(counts.tooLarge) larger than the server's max_payload moved to the dead letters (\(RelayRounds.tooLargeReason))"
    }
    text += "; left in the store: \(store.count) pending, \(store.items.deadCount) dead letters"
    return problem.map { text + "; stopped: " + $0 } ?? text
  }

  /// Rounds until nothing is left (0), or until `--max-seconds` pass with items still local (1).
  package mutating func run() -> SessionResult {
    rounds.releaseLeftovers()
    let deadline = Clock.monotonicSeconds() + options.maxSeconds
    var backoff = NATSBackoff()
    while !StopRequest.isRequested {
      do throws(NATSError) {
        let js = try connected(deadline: deadline)
        switch try round(js, deadline: deadline) {
        case .done: return service.store.count == 0 ? .success : .failure
        case .progress:
          backoff.reset()
          continue
        case .stalled(let reason):
          // A round the deadline cut short (its acks not in yet) says less than the refusal before it.
          let cutShort = Clock.monotonicSeconds() >= deadline
          problem = cutShort ? problem.map { $0 + "; the last round, cut short: " + reason } ?? reason : reason
        }
      } catch {
        problem = error.description
        stream?.connection.close()
        stream = nil
        if error.kind == .refused || error.kind == .auth { return .failure }  // retrying cannot help
      }
      let delay = backoff.next()
      guard Clock.monotonicSeconds() + delay < deadline else {
        problem = (problem ?? "") + "; gave up after --max-seconds \(options.maxSeconds)"
        return .failure
      }
      let until = Clock.monotonicSeconds() + delay
      while Clock.monotonicSeconds() < until && !StopRequest.isRequested { usleep(20_000) }
    }
    problem = "stopped by a signal; what is left stays pending"
    return .failure
  }

  private mutating func connected(deadline: Double) throws(NATSError) -> JetStream {
    if let stream { return stream }
    var settings = nats
    settings.connectSeconds = max(0.5, min(5, deadline - Clock.monotonicSeconds()))
    let js = try Self.connect(settings, options)
    stream = js
    return js
  }

  /// One lease of up to `roundSize` items, published and settled: acked items leave the store.
  private mutating func round(_ js: JetStream, deadline: Double) throws(NATSError) -> RelayRounds.Outcome {
    let leaseMs = Int64(options.maxSeconds * 1000) + 60_000
    guard
      let round = try rounds.lease(max: RelayRounds.roundSize, leaseMs: leaseMs, maxPayload: js.connection.maxPayload)
    else { return .done }
    let acks: [PublishAck?]
    do throws(NATSError) {
      acks = try js.publish(
        round.messages, to: options.stream, deadline: min(deadline, Clock.monotonicSeconds() + 10),
        stop: { StopRequest.isRequested })
    } catch {
      rounds.settle(round, acks: [])
      throw error
    }
    KillPoint.reach(.relayAcked)
    return rounds.settle(round, acks: acks)
  }

  /// A connection to the stream's server, and the stream made (or checked) on it.
  static func connect(_ settings: NATSOptions, _ options: RelayOptions) throws(NATSError) -> JetStream {
    let connection = try NATSConnection(settings)
    let js = JetStream(connection)
    let shape = StreamSettings(name: options.stream, subjects: [options.stream + ".*"], maxBytes: options.maxBytes)
    do throws(NATSError) {
      try js.ensureStream(shape, deadline: Clock.monotonicSeconds() + 5)
    } catch {
      connection.close()
      throw error
    }
    return js
  }
}
