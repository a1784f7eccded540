package import OutboxDomain
import OutboxJSON
package import OutboxNATS
package import OutboxServer

/// What `push-outbox relay` and `--relay` are given (the command line sets it; `RelayCommand`).
package struct RelayOptions: Sendable, Equatable {
  package var to: NATSAddress?
  package var stream = "PUSH_OUTBOX"
  package var credsFile: String?
  package var allowPlaintext = false
  package var maxBytes: Int64 = 1 << 30
  package var maxSeconds = 30.0
  package var defaultUser: String?

  package init() {}

  /// A `--default-user` (or `--relay-default-user`) value: a user identifier object.
  package static func parseUser(_ text: String, flag: String) throws(UsageError) -> UserIdentifier {
    var issues = Issues()
    let value = try? JSONReader.parse(text, maxDepth: 16)
    guard let user = value.flatMap({ UserIdentifier.parse($0, path: flag, issues: &issues) }), issues.isEmpty else {
      throw UsageError("\(flag) needs a user identifier object")
    }
    return user
  }
}

/// What `push-outbox deliver --from` and `--deliver --from` are given (the command line sets it;
/// `FleetDeliverCommand`).
package struct FleetOptions: Sendable, Equatable {
  package var from: NATSAddress?
  package var follow = false
  package var stream = "PUSH_OUTBOX"
  package var credsFile: String?
  package var allowPlaintext = false
  package var leaseSeconds = 5.0
  package var maxBytes: Int64 = 1 << 30

  package init() {}

  /// Whether a fleet flag other than `--from` was given without it.
  package var givenWithoutFrom: Bool { from == nil && self != FleetOptions() }
}

/// How a one-shot relay or fleet session ended; the command line maps it to the process's exit code
/// (`success` 0, `failure` 1).
package enum SessionResult: Sendable, Equatable {
  case success
  case failure
}
