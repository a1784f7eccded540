import OutboxDomain
package import OutboxFleet
import OutboxJSON
import OutboxNATS
package import OutboxServer
import OutboxStore
import OutboxSupport

/// `push-outbox relay --to nats://HOST:PORT [FLAGS]`: a one-shot that moves every pending item into
/// a NATS JetStream stream (the producer side of a fleet, README "Fleet").
///
/// Each round leases up to `RelayRounds.roundSize` items durably (a delivery lease), publishes each with
/// `Nats-Msg-Id: <item id>` to `<stream>.<shard>` (one subject per user shard, so a user's items stay
/// in order), and removes an item only after JetStream's publish ack (`duplicate: true` counts).
/// Items not acked are pending again. NATS down, slow or full: retried with backoff and jitter until
/// `--max-seconds` pass. Exit codes: 0 nothing left; 1 some items stay local (the reason on stderr);
/// 2 usage; 3 the store is locked.
package enum RelayCommand {
  /// The command's settings; the session that uses them is `OutboxFleet`'s.
  package typealias Options = RelayOptions

  package static func run(_ options: Options, _ config: Configuration, env: (String) -> String?) -> ExitCode {
    _ = Signals.install()
    guard let address = options.to else { return usage("needs --to nats://HOST:PORT") }
    let auth: NATSAuth?
    switch credentials(options.credsFile, env: env) {
    case .success(let found): auth = found
    case .failure(let error): return usage(error.description)
    }
    let defaultUser: UserIdentifier?
    do throws(UsageError) {
      defaultUser = try options.defaultUser.map { text throws(UsageError) in
        try RelayOptions.parseUser(text, flag: "--default-user")
      }
    } catch {
      return usage(error.message)
    }
    let service = Service(config: config)
    do { try service.openDisk() } catch {
      Log.stderr("push-outbox relay: \(error.message)")
      return error.exit
    }
    defer { service.finish() }
    var nats = NATSOptions(address: address, auth: auth)
    nats.allowPlaintext = options.allowPlaintext
    var session = RelaySession(
      service: service, nats: nats, options: options, defaultUser: defaultUser)
    let result = session.run()
    Log.stderr("push-outbox relay: " + session.summary)
    return ExitCode(result)
  }

  private static func usage(_ text: String) -> ExitCode {
    Log.stderr("push-outbox relay: \(text) (see --help)")
    return .usage
  }

  /// `PUSH_OUTBOX_NATS_TOKEN`, or `--nats-creds FILE`: a file holding a token, or a JSON object
  /// `{"token":"…"}` or `{"user":"…","password":"…"}`. The secret is never printed.
  static func credentials(_ file: String?, env: (String) -> String?) -> Result<NATSAuth?, NATSError> {
    guard let file else {
      guard let token = env("PUSH_OUTBOX_NATS_TOKEN"), !token.isEmpty else { return .success(nil) }
      return .success(.token(NATSSecret(token)))
    }
    guard let bytes = try? FileIO.read(file), bytes.count <= 65_536 else {
      return .failure(NATSError(.refused, "--nats-creds: cannot read \(file)"))
    }
    let text = String(decoding: bytes, as: UTF8.self).trimmingWhitespace
    guard text.hasPrefix("{") else {
      guard !text.isEmpty else { return .failure(NATSError(.refused, "--nats-creds: \(file) is empty")) }
      return .success(.token(NATSSecret(text)))
    }
    guard let value = try? JSONReader.parse(text, maxDepth: 4) else {
      return .failure(NATSError(.refused, "--nats-creds: \(file) is not JSON"))
    }
    if let token = value["token"]?.stringValue, !token.isEmpty { return .success(.token(NATSSecret(token))) }
    if let user = value["user"]?.stringValue, let password = value["password"]?.stringValue {
      return .success(.user(user, NATSSecret(password)))
    }
    return .failure(NATSError(.refused, "--nats-creds: \(file) needs \"token\", or \"user\" and \"password\""))
  }

  /// A stream name JetStream accepts: letters, digits, `_` and `-`, at most 64.
  static func streamName(_ text: String) -> Bool {
    !text.isEmpty && text.utf8.count <= 64
      && text.utf8.allSatisfy {
        ($0 >= 48 && $0 <= 57) || ($0 | 0x20 >= 97 && $0 | 0x20 <= 122) || $0 == 95 || $0 == 45
      }
  }
}

extension String {
  fileprivate var trimmingWhitespace: String {
    let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" }
    return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
  }
}
