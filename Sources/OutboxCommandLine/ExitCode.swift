package import OutboxStore

/// The process's exit codes: the code uses the names, and `--help` and the man page list the table
/// (Protocol/README.md "Shutdown and exit codes").
package enum ExitCode: Int32, CaseIterable, Sendable {
  case success = 0
  case failure = 1
  case usage = 2
  case locked = 3

  var meaning: String {
    switch self {
    case .success: "clean stop: end of input, SIGTERM, SIGINT, or a closed stdout"
    case .failure: "start-up failure: the store cannot be created, read or recovered"
    case .usage: "usage error, or a store written by a newer format"
    case .locked: "the store is locked by another push-outbox"
    }
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
