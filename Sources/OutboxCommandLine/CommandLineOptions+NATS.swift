package import OutboxNATS
package import OutboxServer

/// The NATS subcommands' rows of the option table (README "Fleet").
extension Configuration {
  /// `push-outbox relay`'s flags (README "Fleet").
  static let relayOptions: [CommandLineOption] = [
    .init(
      name: "--to", valueName: "URL", help: "the NATS server, nats://HOST:PORT (loopback unless plaintext is allowed)",
      command: .relay
    ) { c, v throws(UsageError) in
      switch NATSAddress.parse(v) {
      case .success(let address): c.relay.to = address
      case .failure(let error): throw UsageError(error.description)
      }
    },
    .init(name: "--nats-stream", valueName: "NAME", help: "the JetStream stream (default PUSH_OUTBOX)", command: .relay)
    {
      c, v throws(UsageError) in
      guard RelayCommand.streamName(v) else { throw UsageError("needs letters, digits, _ or - (at most 64)") }
      c.relay.stream = v
    },
    .init(
      name: "--nats-creds", valueName: "PATH",
      help: "file with a token, or {\"user\":…,\"password\":…} (else $PUSH_OUTBOX_NATS_TOKEN)", command: .relay
    ) { c, v throws(UsageError) in c.relay.credsFile = v },
    .init(
      name: "--nats-allow-plaintext", valueName: nil,
      help: "allow a plain-text connection to a host that is not loopback",
      command: .relay
    ) { c, v throws(UsageError) in c.relay.allowPlaintext = try bool(v) },
    .init(
      name: "--nats-max-bytes", valueName: "N", help: "size limit of a stream it creates (default 1073741824)",
      command: .relay
    ) { c, v throws(UsageError) in c.relay.maxBytes = Int64(try int(v, min: 1024, max: Limits.storeBytes)) },
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
      name: "--from", valueName: "URL",
      help: "deliver from this NATS server's stream instead of the store, nats://HOST:PORT", command: .deliver
    ) { c, v throws(UsageError) in
      switch NATSAddress.parse(v) {
      case .success(let address): c.fleet.from = address
      case .failure(let error): throw UsageError(error.description)
      }
    },
    .init(
      name: "--follow", valueName: nil, help: "with --from: keep delivering until SIGTERM or SIGINT",
      command: .deliver
    ) { c, v throws(UsageError) in c.fleet.follow = try bool(v) },
    .init(
      name: "--nats-stream", valueName: "NAME", help: "with --from: the JetStream stream (default PUSH_OUTBOX)",
      command: .deliver
    ) {
      c, v throws(UsageError) in
      guard RelayCommand.streamName(v) else { throw UsageError("needs letters, digits, _ or - (at most 64)") }
      c.fleet.stream = v
    },
    .init(
      name: "--nats-creds", valueName: "PATH",
      help: "file with a token, or {\"user\":…,\"password\":…} (else $PUSH_OUTBOX_NATS_TOKEN)", command: .deliver
    ) { c, v throws(UsageError) in c.fleet.credsFile = v },
    .init(
      name: "--nats-allow-plaintext", valueName: nil,
      help: "allow a plain-text connection to a host that is not loopback", command: .deliver
    ) { c, v throws(UsageError) in c.fleet.allowPlaintext = try bool(v) },
    .init(
      name: "--leader-lease", valueName: "SECONDS",
      help: "with --from: the leader's lease; a standby takes over within two (default 5)", command: .deliver
    ) { c, v throws(UsageError) in c.fleet.leaseSeconds = try number(v, min: 1, max: 3600) },
  ]
}
