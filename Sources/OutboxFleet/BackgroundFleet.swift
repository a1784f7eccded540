import Dispatch
import OutboxDelivery
package import OutboxJSON
package import OutboxNATS
package import OutboxServer
import OutboxSupport
import Synchronization

/// What a fleet deliverer's thread shows the loop: one snapshot behind a mutex, written by the
/// session after each election step, read by `status`.
final class FleetReport: Sendable {
  struct Snapshot: Sendable {
    var connected = false
    var role = FleetLeader.Role.standby
    /// Wall-clock ms when this process became leader; nil while standby.
    var leaderSince: Int64?
    var messages: Int64 = 0
    var bytes: Int64 = 0
    var delivered = 0
    var deadLettered = 0
    var givenBack = 0
    var lastError: String?
    var stopped = false
  }

  private let state = Mutex(Snapshot())
  private let stop = Atomic<Bool>(false)

  /// The serving process is exiting: the session stops.
  func requestStop() { stop.store(true, ordering: .relaxed) }

  var isStopRequested: Bool { stop.load(ordering: .relaxed) }

  var snapshot: Snapshot { state.withLock { $0 } }

  func update(_ change: (inout Snapshot) -> Void) { state.withLock { change(&$0) } }
}

/// `--deliver --from nats://HOST:PORT` while serving: the fleet deliverer of `deliver --from
/// --follow` (`FleetSession`) on a thread of its own. It never touches the local store; it shares
/// only its `FleetReport` with the loop, for `status.delivery.fleet`.
package final class BackgroundFleet: BackgroundWork {
  private let report = FleetReport()
  private let done = DispatchSemaphore(value: 0)
  private let stream: String
  /// How long the exit waits for the session to give its messages back.
  let exitWaitSeconds: Double

  private init(stream: String, exitWaitSeconds: Double) {
    self.stream = stream
    self.exitWaitSeconds = exitWaitSeconds
  }

  /// The deliverer a serving process starts for `--deliver --from`, its thread running.
  package static func start(
    _ options: FleetOptions, auth: NATSAuth?, _ config: Configuration
  ) -> BackgroundFleet? {
    guard let address = options.from else { return nil }
    var nats = NATSOptions(address: address, auth: auth)
    nats.allowPlaintext = options.allowPlaintext
    nats.name = "push-outbox --deliver --from"
    var follow = options
    follow.follow = true
    let session = FleetSession(
      options: follow, nats: nats, settings: config.delivery, batchLimit: config.trackBatchLimit)
    let fleet = BackgroundFleet(stream: options.stream, exitWaitSeconds: 2)
    session.report = fleet.report
    let report = fleet.report
    session.stopRequested = { report.isStopRequested || StopRequest.isRequested }
    nonisolated(unsafe) let unsafeSession = session  // moves to the thread; the loop never touches it
    let done = fleet.done
    DispatchQueue(label: "push-outbox.fleet").async {
      _ = unsafeSession.run()
      let problem = unsafeSession.problem
      report.update {
        $0.stopped = true
        $0.connected = false
        $0.role = .standby
        $0.leaderSince = nil
        if let problem { $0.lastError = problem }
      }
      Log.stderr("push-outbox --deliver --from: " + unsafeSession.summary)
      done.signal()
    }
    return fleet
  }

  package func tick(service: Service, busy: Bool) {}

  package func pollTimeoutMs() -> Int32 { -1 }

  package func finish(service: Service) {
    report.requestStop()
    _ = done.wait(timeout: .now() + exitWaitSeconds)
  }

  package func statusJSON(nowMs: Int64) -> JSONValue {
    let snapshot = report.snapshot
    let state = snapshot.stopped ? "stopped" : snapshot.connected ? "connected" : "connecting"
    return .object([
      JSONMember("state", .string(state)),
      JSONMember("role", .string(snapshot.role.rawValue)),
      JSONMember("leaderSince", snapshot.leaderSince.map { .string(UTCTime.format(ms: $0)) } ?? .null),
      JSONMember(
        "stream",
        .object([
          JSONMember("name", .string(stream)), JSONMember("messages", .int(snapshot.messages)),
          JSONMember("bytes", .int(snapshot.bytes)),
        ])),
      JSONMember("delivered", .int(Int64(snapshot.delivered))),
      JSONMember("deadLettered", .int(Int64(snapshot.deadLettered))),
      JSONMember("givenBack", .int(Int64(snapshot.givenBack))),
      JSONMember("lastError", snapshot.lastError.map(JSONValue.string) ?? .null),
    ])
  }
}
