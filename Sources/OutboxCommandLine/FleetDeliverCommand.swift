import OutboxDelivery
package import OutboxFleet
import OutboxNATS
package import OutboxServer
import OutboxSupport

/// `push-outbox deliver --from nats://HOST:PORT [--follow] [FLAGS]`: the deliverer side of a fleet
/// (README "Fleet"). Producers relay into the stream; deliverers elect one leader on the bucket
/// `<stream>_LEADER`; only the leader fetches from the durable pull consumer `push-outbox-deliver`
/// and sends to Braze, under `--braze-rate`, with the rules of `deliver`:
/// 2xx acks the messages; objects Braze names in `errors`, or alone after a 400, go to
/// `<stream>_DEAD` with their reason; 429, 5xx and timeouts give them back (`-NAK`) with the delay
/// of Retry-After or the backoff; 401, 403 and 404 give everything back and exit 1 with the reason.
///
/// Without `--follow` it delivers what the stream holds and exits 0, or 1 with the reason when
/// messages stay. With it, it runs until SIGTERM or SIGINT, then waits at most the Braze timeout for
/// requests in flight and gives back the rest. Exit 2: usage.
package enum FleetDeliverCommand {
  /// The command's settings; the session that uses them is `OutboxFleet`'s.
  package typealias Options = FleetOptions

  package static func run(_ options: Options, _ config: Configuration, env: (String) -> String?) -> ExitCode {
    _ = Signals.install()
    guard let address = options.from else { return usage("needs --from nats://HOST:PORT") }
    let auth: NATSAuth?
    switch RelayCommand.credentials(options.credsFile, env: env) {
    case .success(let found): auth = found
    case .failure(let error): return usage(error.description)
    }
    var nats = NATSOptions(address: address, auth: auth)
    nats.allowPlaintext = options.allowPlaintext
    nats.name = "push-outbox deliver"
    let session = FleetSession(
      options: options, nats: nats, settings: config.delivery, batchLimit: config.trackBatchLimit)
    let result = session.run()
    Log.stderr("push-outbox deliver: " + session.summary)
    return ExitCode(result)
  }

  private static func usage(_ text: String) -> ExitCode {
    Log.stderr("push-outbox deliver: \(text) (see --help)")
    return .usage
  }
}
