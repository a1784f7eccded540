import OutboxDelivery
import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxNATS
package import OutboxServer
import OutboxStore
import OutboxSupport
import OutboxTransport

/// The flags: the service's, each with its environment twin (`--max-line-bytes` ↔
/// `PUSH_OUTBOX_MAX_LINE_BYTES`) and taken by every subcommand too, and each subcommand's own.
/// This table drives the parser, `--help`, the man page and the shell completions.
package struct CommandLineOption: Sendable {
  package var name: String
  var valueName: String?  // nil for a switch
  var help: String
  /// The values it accepts, for completions (nil: free text).
  package var choices: [String]? = nil
  /// A value that names a directory, for completions.
  var isDirectory = false
  /// The subcommand whose own flag this is (no environment twin); nil for the service's flags.
  var command: Subcommand? = nil
  /// Throws a `UsageError` whose message completes the sentence "`--flag VALUE` …".
  let apply: @Sendable (inout OptionValues, String) throws(UsageError) -> Void

  var environmentName: String {
    "PUSH_OUTBOX_" + String(name.dropFirst(2).map { $0 == "-" ? "_" : Character($0.uppercased()) })
  }

  package func set(_ values: inout OptionValues, _ value: String) throws(UsageError) {
    try apply(&values, value)
  }

  /// Whether `command` (nil: the service) takes this flag.
  func applies(to command: Subcommand?) -> Bool { self.command == nil || self.command == command }

  /// A switch counts as given only when it is on: `--memory=false` asks for nothing.
  func isGiven(_ value: String) -> Bool { valueName != nil || (try? Configuration.bool(value)) == true }
}

/// The flags that print something and exit, in `--help` and the man page.
struct InfoOption: Sendable {
  package var short: String
  package var name: String
  var help: String
}

/// The pairs that cannot be given together (a usage error, exit 2).
let conflictingOptions: [(String, String)] = [("--memory", "--store")]

extension Configuration {
  static let infoOptions: [InfoOption] = [
    .init(short: "-h", name: "--help", help: "show this help and exit"),
    .init(short: "-V", name: "--version", help: "print the version and exit"),
  ]

  package static let options: [CommandLineOption] =
    [
      .init(name: "--store", valueName: "DIR", help: "store directory", isDirectory: true) { c, v throws(UsageError) in
        guard !v.isEmpty else { throw UsageError("needs a directory, not an empty string") }
        c.storePath = v
      },
      .init(name: "--memory", valueName: nil, help: "keep everything in memory; write no files") {
        c, v throws(UsageError) in
        c.memory = try bool(v)
      },
      .init(name: "--accept-loss", valueName: nil, help: "start even if store files are missing; report the loss") {
        c, v throws(UsageError) in
        c.acceptLoss = try bool(v)
      },
      .init(name: "--snapshot-interval", valueName: "SECONDS", help: "snapshot period when dirty (default 1)") {
        c, v throws(UsageError) in c.snapshotInterval = try number(v, min: 0.01, max: 86_400)
      },
      .init(
        name: "--load-image-min-bytes", valueName: "N",
        help:
          "at a clean exit, write load.image for a fast next start when the items come to N bytes (default 268435456; off)"
      ) { c, v throws(UsageError) in c.loadImageMinBytes = v == "off" ? nil : try int(v, min: 0, max: Limits.storeBytes)
      },
      .init(name: "--max-line-bytes", valueName: "N", help: "longest accepted line or message body (default 16777216)")
      {
        c, v throws(UsageError) in c.maxLineBytes = try int(v, min: 64, max: Limits.bytes)
      },
      .init(
        name: "--framing", valueName: "MODE",
        help: "auto, newline or content-length (default auto: from the first byte)",
        choices: Framing.allCases.map(\.rawValue)
      ) { c, v throws(UsageError) in c.framing = try choice(v, Framing.allCases, \.rawValue) },
      .init(name: "--max-depth", valueName: "N", help: "deepest JSON nesting (default 128, at most 1000)") {
        c, v throws(UsageError) in c.maxDepth = try int(v, min: 2, max: 1000)
      },
      .init(name: "--max-batch", valueName: "N", help: "most requests in one batch (default 10000)") {
        c, v throws(UsageError) in c.maxBatch = try int(v, min: 1, max: 1_000_000)
      },
      .init(
        name: "--threads", valueName: "N",
        help: "1, or 2 to check saves on a second core while the first stores them (default 2 with two cores)"
      ) { c, v throws(UsageError) in c.threads = try int(v, min: 1, max: 2) },
      .init(
        name: "--log-level", valueName: "LEVEL", help: "error, warn, info or debug (default warn)",
        choices: LogLevel.allCases.map(\.name)
      ) { c, v throws(UsageError) in c.logLevel = try choice(v, LogLevel.allCases, \.name) },
      .init(
        name: "--log-format", valueName: "FORMAT", help: "stderr lines: text or json (default text)",
        choices: LogFormat.allCases.map(\.rawValue)
      ) { c, v throws(UsageError) in c.logFormat = try choice(v, LogFormat.allCases, \.rawValue) },
      .init(
        name: "--strings", valueName: "POLICY", help: "over-long strings: reject or truncate (default reject)",
        choices: stringPolicies.map(\.rawValue)
      ) { c, v throws(UsageError) in c.domain.strings = try choice(v, stringPolicies, \.rawValue) },
      .init(name: "--array-limit", valueName: "N", help: "longest custom attribute array (default 25)") {
        c, v throws(UsageError) in c.domain.arrayLimit = try int(v, min: 1, max: 1_000_000)
      },
      .init(name: "--max-properties-bytes", valueName: "N", help: "largest event properties (default 51200)") {
        c, v throws(UsageError) in c.domain.maxPropertiesBytes = try int(v, min: 2, max: Limits.bytes)
      },
      .init(
        name: "--max-nested-attribute-bytes", valueName: "N", help: "largest nested custom attribute (default 102400)"
      ) {
        c, v throws(UsageError) in c.domain.maxNestedAttributeBytes = try int(v, min: 2, max: Limits.bytes)
      },
      .init(name: "--track-batch-limit", valueName: "N", help: "objects per /users/track array (default 75)") {
        c, v throws(UsageError) in c.trackBatchLimit = try int(v, min: 1, max: 10_000)
      },
      .init(
        name: "--fsync", valueName: "POLICY", help: "always, everysec or never (default everysec)",
        choices: FsyncPolicy.allCases.map(\.rawValue)
      ) { c, v throws(UsageError) in c.fsync = try choice(v, FsyncPolicy.allCases, \.rawValue) },
      .init(name: "--max-pending", valueName: "N", help: "most items held (default unlimited)") {
        c, v throws(UsageError) in c.store.maxPending = try int(v, min: 1, max: Limits.items)
      },
      .init(name: "--max-pending-bytes", valueName: "N", help: "most bytes held (default unlimited)") {
        c, v throws(UsageError) in c.store.maxPendingBytes = try int(v, min: 1, max: Limits.storeBytes)
      },
      .init(
        name: "--max-store-bytes", valueName: "N",
        help: "most bytes of the whole store directory; saves stop short of it, nothing is dropped (default unlimited)"
      ) {
        c, v throws(UsageError) in c.store.maxStoreBytes = try int(v, min: StoreCap.minimum, max: Limits.storeBytes)
      },
      .init(
        name: "--max-pending-age", valueName: "SECONDS",
        help: "health is degraded while the oldest pending item is older (default unset)"
      ) {
        c, v throws(UsageError) in c.maxPendingAge = try number(v, min: 1, max: 31_536_000)
      },
      .init(
        name: "--max-retry-age", valueName: "SECONDS",
        help: "health is degraded while delivery has kept failing this long (default 600)"
      ) {
        c, v throws(UsageError) in c.maxRetryAge = try number(v, min: 1, max: 31_536_000)
      },
      .init(name: "--max-item-bytes", valueName: "N", help: "largest single item (default unlimited)") {
        c, v throws(UsageError) in c.store.maxItemBytes = try int(v, min: 1, max: Limits.bytes)
      },
      .init(name: "--fixed-clock", valueName: "ISO8601", help: "testing: every timestamp is this instant") {
        c, v throws(UsageError) in
        guard let ms = ISO8601.parseDateTime(v) else { throw UsageError("needs an ISO 8601 date-time") }
        c.fixedClock = ms
      },
      .init(name: "--id-seed", valueName: "N", help: "testing: make ids deterministic") { c, v throws(UsageError) in
        guard let seed = UInt64(v) else { throw UsageError("needs a non-negative integer") }
        c.idSeed = seed
      },
      .init(name: "--track-batch-mode", valueName: "MODE", help: "combined (default) or per-array /users/track limit") {
        c, v throws(UsageError) in
        guard let mode = TrackBatchMode(rawValue: v) else { throw UsageError("must be combined or per-array") }
        c.trackBatchMode = mode
      },
      .init(name: "--braze-endpoint", valueName: "URL", help: "Braze REST endpoint, e.g. https://rest.iad-01.braze.com")
      {
        c, v throws(UsageError) in
        do throws(SettingError) { c.delivery.endpoint = try DeliverySettings.endpoint(v) } catch {
          throw UsageError(error.description)
        }
      },
      .init(
        name: "--braze-api-key-file", valueName: "PATH",
        help: "file holding the Braze REST API key (else $BRAZE_API_KEY)"
      ) {
        c, v throws(UsageError) in
        c.apiKeyFile = v
      },
      .init(name: "--deliver", valueName: nil, help: "deliver pending items to Braze in the background") {
        c, v throws(UsageError) in
        c.delivery.background = try bool(v)
      },
      .init(
        name: "--drain-timeout", valueName: "SECONDS",
        help: "with --deliver: after stdin ends, keep delivering what is pending for up to SECONDS (default 30)"
      ) { c, v throws(UsageError) in c.drainTimeout = try number(v, min: 0, max: 86_400) },
      .init(name: "--braze-rate", valueName: "N/S", help: "at most N requests per S seconds (default 500/1)") {
        c, v throws(UsageError) in
        do throws(SettingError) { c.delivery.rate = try RateLimit(v) } catch { throw UsageError(error.description) }
      },
      .init(
        name: "--braze-max-in-flight", valueName: "N|auto",
        help: "requests in flight: a fixed N (1-1024), or auto (default): follows the round trip, up to 512"
      ) {
        c, v throws(UsageError) in c.delivery.maxInFlight = v == "auto" ? nil : try int(v, min: 1, max: 1024)
      },
      .init(name: "--braze-timeout-ms", valueName: "MS", help: "whole-request timeout (default 30000)") {
        c, v throws(UsageError) in c.delivery.timeoutMs = try int(v, min: 100, max: 600_000)
      },
      .init(name: "--braze-backoff-ms", valueName: "MS", help: "first retry delay, doubled per failure (default 1000)")
      {
        c, v throws(UsageError) in
        c.delivery.backoffMs = try int(v, min: 1, max: 3_600_000)
        c.delivery.maxBackoffMs = max(c.delivery.maxBackoffMs, c.delivery.backoffMs)
      },
      .init(
        name: "--metrics-listen", valueName: "HOST:PORT",
        help: "serve GET /metrics (Prometheus) there; PORT alone is 127.0.0.1"
      ) { c, v throws(UsageError) in
        guard let address = MetricsAddress.parse(v) else {
          throw UsageError("needs PORT, HOST:PORT or [IPV6]:PORT with a numeric host (e.g. 127.0.0.1:9464)")
        }
        c.metricsListen = address
      },
      .init(
        name: "--metrics-file", valueName: "PATH", help: "write the metrics there each snapshot interval and at exit"
      ) { c, v throws(UsageError) in
        guard !v.isEmpty else { throw UsageError("needs a path, not an empty string") }
        c.metricsFile = v
      },
    ] + natsOptions + commandOptions

  /// The subcommands' own flags (`push-outbox flush --format …`, `push-outbox import --user …`).
  private static let commandOptions: [CommandLineOption] =
    [
      .init(
        name: "--format", valueName: "FORMAT", help: "items or usersTrack (/users/track bodies) (default items)",
        choices: FlushCommand.Options.formats, command: .flush
      ) { c, v throws(UsageError) in c.flush.format = try choice(v, FlushCommand.Options.formats, \.self) },
      .init(
        name: "--lease", valueName: "MS", help: "lease the items for MS ms instead; ack the printed flushId later",
        command: .flush
      ) { c, v throws(UsageError) in c.flush.leaseMs = try int(v, min: 1, max: 3_155_760_000_000) },
      .init(
        name: "--default-user", valueName: "JSON", help: "the user for items saved without one (usersTrack)",
        command: .flush
      ) { c, v throws(UsageError) in c.flush.defaultUser = v },
      .init(
        name: "--max", valueName: "N", help: "write at most N items (default all; 10000 with --lease)", command: .flush
      ) {
        c, v throws(UsageError) in c.flush.max = try int(v, min: 1, max: Int(Int32.max))
      },
      .init(
        name: "--user", valueName: "JSON",
        help: "the user every imported item is saved for, e.g. {\"externalId\":\"u1\"}",
        command: .import
      ) { c, v throws(UsageError) in c.user = try ImportCommand.parseUser(v) },
      .init(
        name: "--format", valueName: "FORMAT", help: "items or usersTrack (/users/track bodies) (default items)",
        choices: FlushCommand.Options.formats, command: .dump
      ) { c, v throws(UsageError) in c.dump.format = try choice(v, FlushCommand.Options.formats, \.self) },
      .init(
        name: "--dead-letters", valueName: nil, help: "the dead letters instead of the pending items", command: .dump
      ) { c, v throws(UsageError) in c.dump.deadLetters = try bool(v) },
      .init(
        name: "--max-document-bytes", valueName: "N",
        help: "documents over N bytes get one diagnostic and are not read (default 1048576)", command: .lsp
      ) { c, v throws(UsageError) in c.lsp.maxDocumentBytes = try int(v, min: 64, max: 1 << 28) },
    ] + relayOptions + fleetOptions + fakeBrazeOptions + deliverOptions

  private static let stringPolicies: [StringPolicy] = [.reject, .truncate]
}
