import OutboxJSON
import OutboxJSONRPC

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
