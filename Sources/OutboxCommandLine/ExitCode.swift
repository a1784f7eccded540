package import OutboxFleet
package import OutboxServer
package import OutboxStore
package import OutboxTransport

/// The process's exit codes: the code uses the names, and `--help` and the man page list the table
/// (Protocol/README.md "Shutdown and exit codes").
package enum ExitCode: Int32, CaseIterable, Sendable {
  case success = 0
  case failure = 1
  case usage = 2
  case locked = 3
  case framingLost = 4
  /// `deliver`: everything left the store, but Braze refused some items (dead letters).
  case deadLettered = 5
  /// `deliver`: some items are still pending (Braze kept failing, or `--max-seconds` ran out).
  case stillPending = 6

  var meaning: String {
    switch self {
    case .success: "clean stop: end of input, SIGTERM, SIGINT, a closed stdout, or exit after shutdown"
    case .failure: "start-up failure: the store cannot be created, read or recovered; or exit without shutdown"
    case .usage: "usage error, or a store written by a newer format"
    case .locked: "the store is locked by another push-outbox"
    case .framingLost: "a Content-Length header could not be read and the input cannot be resynchronised"
    case .deadLettered: "deliver: nothing is left pending, but some items were dead-lettered (Braze refused them)"
    case .stillPending: "deliver: some items are still pending (Braze kept failing or --max-seconds ran out); run again"
    }
  }
}

extension ExitCode {
  /// How the server ends after its loop stopped for `reason` (its final snapshot taken).
  package init(_ reason: StopReason, _ lifecycle: Lifecycle) {
    switch reason {
    case .endOfInput, .signal, .outputClosed: self = .success
    case .framingLost: self = .framingLost
    case .exitRequested: self = lifecycle.exitCode == 0 ? .success : .failure
    }
  }
}

extension ExitCode {
  /// A relay or fleet session's end: 0 or 1.
  package init(_ result: SessionResult) {
    self = result == .success ? .success : .failure
  }
}

extension StartupError {
  /// `failure` for a store that cannot be used, `usage` for a newer format, `locked` for a store in use.
  package var exit: ExitCode {
    switch kind {
    case .refused, .unavailable: .failure
    case .unsupportedVersion: .usage
    case .locked: .locked
    }
  }
}
