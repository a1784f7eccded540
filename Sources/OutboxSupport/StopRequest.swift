import Synchronization

/// Set once a stopping signal (SIGTERM, SIGINT, SIGHUP, SIGQUIT) arrived: every wait that can last
/// (a delivery pass, the limiter, the one-shots' pauses) checks it at least every 100 ms, so a signal
/// ends the process within about a second whatever it is waiting on. Setting it is one lock-free
/// store, safe in a signal handler.
package enum StopRequest {
  private static let flag = Atomic<Bool>(false)

  package static var isRequested: Bool { flag.load(ordering: .relaxed) }

  package static func request() { flag.store(true, ordering: .relaxed) }
}
