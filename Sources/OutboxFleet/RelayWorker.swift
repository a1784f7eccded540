import Dispatch
import OutboxNATS
import OutboxSupport
import Synchronization

/// What publishes for `--relay`: the NATS stream (`NATSRelayPublisher`), or a fake in tests.
/// Used on the relay's thread only.
protocol RelayPublisher: AnyObject, Sendable {
  /// Connects and makes (or checks) the stream; answers the server's `max_payload`.
  func connect() throws(NATSError) -> Int
  /// Publishes and waits until `deadline` for the acks: one entry per message, nil where none came.
  func publish(_ messages: [OutgoingMessage], deadline: Double) throws(NATSError) -> [PublishAck?]
  func close()
}

/// The relay thread's connection state, as `status.relay.state` names it.
enum RelayState: String, Sendable {
  case connecting, connected, backoff
}

/// The thread of `--relay`: it owns the connection to NATS (connect with backoff and jitter, make
/// the stream, publish, wait for the acks) and never touches the store. The loop hands it rounds
/// (`submit`), each after its lease is durable, a few ahead, and takes the acks back in order
/// (`takeResult`) to settle them in the store. Rounds are published one after the other on one
/// connection; a round handed over while one before it was in flight comes back unpublished when
/// that one was not wholly acked (its items come back to the store after it), so a user's items
/// never overtake the ones given back. Everything shared is behind one mutex.
final class RelayWorker: Sendable {
  struct Job: Sendable {
    let id: UInt64
    let messages: [OutgoingMessage]
    /// The job still in flight when this one was handed over, if any: this one is published only
    /// if that one was wholly acked.
    var after: UInt64?
  }

  struct Result: Sendable {
    let id: UInt64
    /// One entry per message of the job; empty when the publish failed.
    let acks: [PublishAck?]
  }

  /// What the loop reads of the thread.
  struct Snapshot: Sendable {
    var state = RelayState.connecting
    var maxPayload = 0
  }

  private struct Shared: Sendable {
    var snapshot = Snapshot()
    var error: String?
    var jobs: [Job] = []
    var results: [Result] = []
    var stopping = false
  }

  private let shared = Mutex(Shared())
  private let wake = DispatchSemaphore(value: 0)
  private let stopped = DispatchSemaphore(value: 0)
  private let publisher: any RelayPublisher
  /// How long one publish waits for its acks.
  let publishSeconds: Double
  private let backoffFirst: Double

  init(publisher: any RelayPublisher, publishSeconds: Double = 10, backoffFirst: Double = 0.1) {
    self.publisher = publisher
    self.publishSeconds = publishSeconds
    self.backoffFirst = backoffFirst
  }

  func start() {
    DispatchQueue(label: "push-outbox.relay").async { self.run() }
  }

  var snapshot: Snapshot { shared.withLock { $0.snapshot } }

  /// The last error since the previous call, if any.
  func takeError() -> String? {
    shared.withLock { shared in
      defer { shared.error = nil }
      return shared.error
    }
  }

  func submit(_ job: Job) {
    shared.withLock { $0.jobs.append(job) }
    wake.signal()
  }

  func takeResult(_ id: UInt64) -> Result? {
    shared.withLock { shared in
      guard let index = shared.results.firstIndex(where: { $0.id == id }) else { return nil }
      return shared.results.remove(at: index)
    }
  }

  /// Asks the thread to stop; it closes the connection after the call it is in.
  func stop() {
    shared.withLock { $0.stopping = true }
    wake.signal()
  }

  /// Waits at most `seconds` for the result of job `id`.
  func waitResult(_ id: UInt64, seconds: Double) -> Result? {
    let until = Clock.monotonicSeconds() + seconds
    while true {
      if let result = takeResult(id) { return result }
      if Clock.monotonicSeconds() >= until { return nil }
      _ = stopped.wait(timeout: .now() + .milliseconds(5))
    }
  }

  private var isStopping: Bool { shared.withLock { $0.stopping } }

  private func run() {
    var backoff = NATSBackoff(first: backoffFirst, limit: 5)
    var connected = false
    /// The last job taken, and whether the stream took all of it.
    var last: (id: UInt64, whole: Bool) = (0, true)
    while !isStopping {
      if !connected {
        shared.withLock { $0.snapshot.state = .connecting }
        do throws(NATSError) {
          let maxPayload = try publisher.connect()
          connected = true
          backoff.reset()
          shared.withLock { $0.snapshot = Snapshot(state: .connected, maxPayload: maxPayload) }
        } catch {
          failed(error.description, &backoff)
          continue
        }
      }
      guard let job = shared.withLock({ $0.jobs.isEmpty ? nil : $0.jobs.removeFirst() }) else {
        _ = wake.wait(timeout: .now() + .milliseconds(500))
        continue
      }
      if let after = job.after, after == last.id, !last.whole {
        last = (job.id, false)  // back unpublished, behind the items of the one before
        shared.withLock { $0.results.append(Result(id: job.id, acks: [])) }
        continue
      }
      do throws(NATSError) {
        let acks = try publisher.publish(job.messages, deadline: Clock.monotonicSeconds() + publishSeconds)
        last = (job.id, acks.allSatisfy { if case .stored? = $0 { true } else { false } })
        shared.withLock { $0.results.append(Result(id: job.id, acks: acks)) }
        if !job.messages.isEmpty && acks.allSatisfy({ $0 == nil }) {
          connected = false
          failed("no publish ack within \(publishSeconds) s (NATS slow or gone)", &backoff)
        }
      } catch {
        last = (job.id, false)
        shared.withLock { $0.results.append(Result(id: job.id, acks: [])) }
        connected = false
        failed(error.description, &backoff)
      }
    }
    publisher.close()
    stopped.signal()
  }

  /// Closes the connection, reports the error and waits the next backoff (a stop cuts it short).
  private func failed(_ error: String, _ backoff: inout NATSBackoff) {
    publisher.close()
    shared.withLock {
      $0.error = error
      $0.snapshot.state = .backoff
    }
    let until = Clock.monotonicSeconds() + backoff.next()
    while !isStopping, Clock.monotonicSeconds() < until {
      _ = wake.wait(timeout: .now() + .milliseconds(Int(max(1, (until - Clock.monotonicSeconds()) * 1000))))
    }
  }
}

/// `RelayWorker`'s publisher for a real NATS server: the connection and the stream of `relay`.
final class NATSRelayPublisher: RelayPublisher, @unchecked Sendable {  // used on the relay's thread only
  private let settings: NATSOptions
  private let options: RelayOptions
  private var stream: JetStream?

  init(settings: NATSOptions, options: RelayOptions) {
    self.settings = settings
    self.options = options
  }

  func connect() throws(NATSError) -> Int {
    let js = try RelaySession.connect(settings, options)
    stream = js
    return js.connection.maxPayload
  }

  func publish(_ messages: [OutgoingMessage], deadline: Double) throws(NATSError) -> [PublishAck?] {
    guard let stream else { throw NATSError(.closed, "not connected") }
    return try stream.publish(messages, to: options.stream, deadline: deadline)
  }

  func close() {
    stream?.connection.close()
    stream = nil
  }
}
