import OutboxDelivery
import OutboxJSON
import OutboxJSONRPC
import OutboxStore
import OutboxSupport

/// The editor lifecycle of LSP: `shutdown` (a request), then `exit` (a notification). Optional:
/// a client that never sends them ends the process by closing stdin, as before.
package struct Lifecycle: Sendable {
  /// `shutdown` was answered: every later request but `exit` is refused (`RPCError.shuttingDown`).
  package internal(set) var shutDown = false
  /// Set by `exit`: the process ends with it, 0 after `shutdown` and 1 without.
  package internal(set) var exitCode: Int32? = nil
}

extension RPCError {
  /// A request after `shutdown`.
  static let shuttingDown = RPCError(
    .invalidRequest, "Invalid Request",
    data: .object([
      JSONMember("reason", .string("shutting_down")),
      JSONMember("detail", .string("the server was shut down; only exit is accepted")),
    ]))
}

extension Service {
  /// The snapshot `shutdown` takes: what the journal holds is committed, a snapshot in progress
  /// finishes, and a new one is written when anything changed since. The journal stays open.
  func snapshotNow() {
    if let failure = store.commit() { log.error("journal write failed at shutdown (\(failure))") }
    disk?.snapshotNow(store, now: clock.now())
  }
}

extension Service {
  /// `--deliver` once stdin has ended: delivery goes on, as a drain, until nothing is left that it
  /// could send, Braze refuses the endpoint or key, a stopping signal comes, or `--drain-timeout`
  /// seconds pass. What is left stays in the store for the next start.
  package func drainDelivery() {
    guard config.delivery.background, config.drainTimeout > 0, let delivery else { return }
    let start = Clock.monotonicSeconds()
    let until = start + config.drainTimeout
    let before = store.count
    while !StopRequest.isRequested && Clock.monotonicSeconds() < until {
      tick(now: clock.now())
      let summary = delivery.summary
      if summary.configError != nil { break }
      if store.count == 0 || (summary.inFlight == 0 && store.count == store.items.leasedCount) { break }
      let wait = pollTimeoutMs()
      usleep(UInt32(wait < 0 ? 20 : min(max(wait, 1), 20)) * 1000)
    }
    guard before > 0 else { return }
    let seconds = Int((Clock.monotonicSeconds() - start).rounded())
    let left = store.count
    let text =
      "stdin ended: delivery drained for \(seconds) s; \(before - left) items left the store, \(left) still pending"
    if left > 0 { log.warn(text + " (kept for the next start)") } else { log.info(text) }
  }
}
