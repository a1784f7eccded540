package import OutboxFakeBraze
import OutboxFleet
package import OutboxServer

/// The subcommands: one-shots that open the same store with the same flags, then exit.
package enum Subcommand: String, CaseIterable, Sendable {
  case deliver, flush, `import`, verify, dump, ack, release, relay, lsp
  case fakeBraze = "fake-braze"

  /// Whether the command takes one word that is not a flag (import's FILE, ack's and release's FLUSHID).
  var takesOperand: Bool { self == .import || self == .ack || self == .release }

  /// The arguments after the name, for `--help`, the man page and the completions.
  package var arguments: String {
    switch self {
    case .deliver: "[--from nats://HOST:PORT [--follow]] [options]"
    case .flush, .verify, .dump: "[options]"
    case .relay: "--to nats://HOST:PORT [options]"
    case .import: "[--user JSON] [options] FILE"
    case .ack, .release: "[options] FLUSHID"
    case .lsp: "[--max-document-bytes N]"
    case .fakeBraze: "[--listen HOST:PORT] [--api-key KEY] [--record FILE] [options]"
    }
  }

  var help: String {
    switch self {
    case .deliver:
      "deliver to Braze once, then exit (0 all delivered, 5 some dead-lettered, 6 some still pending); --from: a fleet's stream"
    case .import:
      "import the guide's App Group storage from FILE (plutil -convert json; - for stdin), then exit (1: some rejected)"
    case .flush: "write pending items to stdout, one per line; each leaves the store once written"
    case .verify: "check every store file read-only, no lock; print a JSON report (1: damaged)"
    case .dump: "print pending items (or dead letters) one JSON line each, read-only, no lock"
    case .ack: "ack a flush --lease by its flushId: its items leave the store (1: unknown or expired)"
    case .release: "release a flush --lease by its flushId: its items are pending again (1: unknown or expired)"
    case .relay: "publish pending items to a NATS JetStream stream, then exit (1: some stay local)"
    case .lsp: "a language server for push payloads (.apns, JSON) on stdin/stdout; opens no store"
    case .fakeBraze: "serve a fake Braze POST /users/track for tests, checking and recording each request"
    }
  }

  /// The service options this subcommand reads, the only ones its `--help` lists (the others are
  /// still accepted, and their environment twins read, so one environment serves every command).
  var serviceOptions: Set<String> {
    let logs: Set<String> = ["--log-level", "--log-format"]
    let store: Set<String> =
      logs.union([
        "--store", "--memory", "--accept-loss", "--snapshot-interval", "--load-image-min-bytes", "--fsync",
        "--max-pending", "--max-pending-bytes", "--max-store-bytes", "--max-item-bytes", "--fixed-clock",
      ])
    let batches: Set<String> = ["--track-batch-limit", "--track-batch-mode"]
    let nats: Set<String> = ["--nats-stream", "--nats-creds", "--nats-allow-plaintext", "--nats-max-bytes"]
    switch self {
    case .deliver:
      return store.union(batches).union(nats).union([
        "--braze-endpoint", "--braze-api-key-file", "--braze-rate", "--braze-max-in-flight", "--braze-timeout-ms",
        "--braze-backoff-ms", "--metrics-listen", "--metrics-file", "--from", "--leader-lease", "--id-seed",
      ])
    case .flush: return store.union(batches).union(["--id-seed"])
    case .import:
      return store.union([
        "--strings", "--array-limit", "--max-properties-bytes", "--max-nested-attribute-bytes", "--id-seed",
      ])
    case .verify: return logs.union(["--store"])
    case .dump: return logs.union(batches).union(["--store", "--memory"])
    case .ack, .release: return store
    case .relay: return store.union(nats).union(["--id-seed"])
    case .fakeBraze: return logs
    case .lsp: return logs.union(["--max-line-bytes"])
    }
  }
}

/// What one command line asks for: the one parse (`Invocation.parse`) makes this value, and the
/// executable runs it.
package enum Invocation: Sendable {
  /// No subcommand: serve JSON-RPC on stdin/stdout (and relay to NATS with `--relay`).
  case serve(Configuration, relay: RelayCommand.Options?, fleet: FleetDeliverCommand.Options?)
  case deliver(Configuration)
  /// `deliver --from nats://…`: a fleet's deliverer.
  case deliverFrom(Configuration, FleetDeliverCommand.Options)
  case flush(Configuration, FlushCommand.Options)
  case `import`(Configuration, file: String, user: [UInt8]?)
  case verify(Configuration)
  case dump(Configuration, DumpCommand.Options)
  case relay(Configuration, RelayCommand.Options)
  /// `lsp`: the payload language server (no store).
  case lsp(Configuration, LSPCommand.Options)
  /// `fake-braze`: a Braze stand-in for tests.
  case fakeBraze(FakeBrazeSettings)
  /// `ack` or `release` of one flush lease.
  case endLease(Configuration, LeaseCommand.Action, flushId: String)
  /// `--help` (`-h`), of the service or of a subcommand.
  case help(Subcommand?)
  case version
  /// `--generate-man`: the man page (roff), from the option table.
  case manPage
  /// `--generate-completion SHELL`: a completion script, from the option table.
  case completion(Shell)

  /// The settings a run uses; nil for the commands that print something.
  var configuration: Configuration? {
    switch self {
    case .serve(let config, _, _), .deliver(let config), .deliverFrom(let config, _), .flush(let config, _),
      .import(let config, _, _),
      .verify(let config), .dump(let config, _), .endLease(let config, _, _), .relay(let config, _),
      .lsp(let config, _):
      config
    case .help, .version, .manPage, .completion, .fakeBraze: nil
    }
  }
}

/// What the option table's rows write into: the service's settings (read through, so a row says
/// `c.storePath = …`) and the subcommands' own values.
@dynamicMemberLookup
package struct OptionValues: Sendable {
  package var config: Configuration
  package var flush = FlushCommand.Options()
  package var dump = DumpCommand.Options()
  package var relay = RelayCommand.Options()
  package var fleet = FleetDeliverCommand.Options()
  package var lsp = LSPCommand.Options()
  /// The NATS settings the service flags set, shared by `--relay`, `relay` and `deliver --from`.
  package var nats = NATSFlags()
  /// `import --user`, checked and written back as JSON.
  package var user: [UInt8]?
  /// `fake-braze`'s settings.
  package var fake = FakeBrazeSettings()

  package subscript<T>(dynamicMember path: WritableKeyPath<Configuration, T>) -> T {
    get { config[keyPath: path] }
    set { config[keyPath: path] = newValue }
  }
}

/// The shells `--generate-completion` writes for.
package enum Shell: String, Sendable, CaseIterable {
  case bash, zsh, fish
}
