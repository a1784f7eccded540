import OutboxFleet
import OutboxNATS
import OutboxServer

/// The NATS settings a serving process (`--relay`), `relay` and `deliver --from` share: service
/// flags, each with its environment twin (`--nats-stream` ↔ `PUSH_OUTBOX_NATS_STREAM`).
package struct NATSFlags: Sendable, Equatable {
  /// `--relay nats://HOST:PORT`: relay pending items there in the background while serving.
  var relay: NATSAddress?
  var stream = "PUSH_OUTBOX"
  var credsFile: String?
  var allowPlaintext = false
  var maxBytes: Int64 = 1 << 30
  /// `--relay-default-user JSON`: the user the background relay gives items saved without one.
  var defaultUser: String?
}

/// The NATS rows of the option table (README "Fleet").
extension Configuration {
  /// The service's NATS flags: `--relay` and the settings every NATS connection shares.
  static let natsOptions: [CommandLineOption] = [
    .init(
      name: "--relay", valueName: "URL",
      help: "relay pending items to this NATS server's stream in the background, nats://HOST:PORT"
    ) { c, v throws(UsageError) in c.nats.relay = try natsAddress(v) },
    .init(
      name: "--relay-default-user", valueName: "JSON",
      help: "with --relay: the user for items saved without one (else no_identifier dead letters)"
    ) { c, v throws(UsageError) in c.nats.defaultUser = v },
    .init(
      name: "--from", valueName: "URL",
      help: "deliver (deliver, or --deliver while serving) from this NATS server's stream as one of a fleet"
    ) { c, v throws(UsageError) in c.fleet.from = try natsAddress(v) },
    .init(
      name: "--leader-lease", valueName: "SECONDS",
      help: "with --from: the leader's lease; a standby takes over within two (default 5)"
    ) { c, v throws(UsageError) in c.fleet.leaseSeconds = try number(v, min: 1, max: 3600) },
    .init(name: "--nats-stream", valueName: "NAME", help: "the JetStream stream (default PUSH_OUTBOX)") {
      c, v throws(UsageError) in
      guard RelayCommand.streamName(v) else { throw UsageError("needs letters, digits, _ or - (at most 64)") }
      c.nats.stream = v
    },
    .init(
      name: "--nats-creds", valueName: "PATH",
      help: "file with a token, or {\"user\":…,\"password\":…} (else $PUSH_OUTBOX_NATS_TOKEN)"
    ) { c, v throws(UsageError) in c.nats.credsFile = v },
    .init(
      name: "--nats-allow-plaintext", valueName: nil,
      help: "allow a plain-text NATS connection to a host that is not loopback"
    ) { c, v throws(UsageError) in c.nats.allowPlaintext = try bool(v) },
    .init(
      name: "--nats-max-bytes", valueName: "N", help: "size limit of a stream it creates (default 1073741824)"
    ) { c, v throws(UsageError) in c.nats.maxBytes = Int64(try int(v, min: 1024, max: Limits.storeBytes)) },
  ]

  /// `push-outbox relay`'s flags (README "Fleet").
  static let relayOptions: [CommandLineOption] = [
    .init(
      name: "--to", valueName: "URL", help: "the NATS server, nats://HOST:PORT (loopback unless plaintext is allowed)",
      command: .relay
    ) { c, v throws(UsageError) in c.relay.to = try natsAddress(v) },
    .init(
      name: "--max-seconds", valueName: "SECONDS", help: "give up retrying after this long (default 30)",
      command: .relay
    ) { c, v throws(UsageError) in c.relay.maxSeconds = try number(v, min: 0.1, max: 86_400) },
    .init(
      name: "--default-user", valueName: "JSON", help: "the user for items saved without one", command: .relay
    ) { c, v throws(UsageError) in c.relay.defaultUser = v },
  ]

  /// `push-outbox deliver --from`'s flags (README "Fleet").
  static let fleetOptions: [CommandLineOption] = [
    .init(
      name: "--follow", valueName: nil, help: "with --from: keep delivering until SIGTERM or SIGINT",
      command: .deliver
    ) { c, v throws(UsageError) in c.fleet.follow = try bool(v) }
  ]

  private static func natsAddress(_ text: String) throws(UsageError) -> NATSAddress {
    switch NATSAddress.parse(text) {
    case .success(let address): return address
    case .failure(let error): throw UsageError(error.description)
    }
  }
}

extension NATSFlags {
  /// Refuses plain text to a host that is not loopback (TLS is not supported yet).
  static func checkPlaintext(_ address: NATSAddress, flag: String, allowed: Bool) throws(UsageError) {
    guard address.isLoopback || allowed else {
      throw UsageError(
        "\(flag) \(address) is not loopback and TLS is not supported yet: reach NATS through a leaf node on"
          + " 127.0.0.1, or give --nats-allow-plaintext")
    }
  }
}

extension RelayCommand.Options {
  /// The shared NATS settings, as the service flags set them.
  mutating func take(_ nats: NATSFlags) {
    stream = nats.stream
    credsFile = nats.credsFile
    allowPlaintext = nats.allowPlaintext
    maxBytes = nats.maxBytes
  }
}

extension FleetDeliverCommand.Options {
  /// The shared NATS settings, as the service flags set them.
  mutating func take(_ nats: NATSFlags) {
    stream = nats.stream
    credsFile = nats.credsFile
    allowPlaintext = nats.allowPlaintext
    maxBytes = nats.maxBytes
  }
}
