package import OutboxDelivery
package import OutboxDomain
package import OutboxStore
package import OutboxSupport
package import OutboxTransport

/// Everything the command line and the environment can set.
package struct Configuration: Sendable {
  /// The store directory; ignored with `--memory`.
  package var storePath: String?
  /// `--memory`: keep everything in memory and write no files.
  package var memory = false
  package var snapshotInterval = 1.0
  /// `--load-image-min-bytes`: a clean exit writes `load.image` when the held items come to at least
  /// this many bytes (nil: never).
  package var loadImageMinBytes: Int? = FileOptions.defaultLoadImageMinBytes
  /// `--accept-loss`: start even when recovery finds store files missing.
  package var acceptLoss = false
  package var maxLineBytes = 16 * 1024 * 1024
  /// `--framing`: newline-delimited, Content-Length headers, or decided by the first bytes.
  package var framing = Framing.auto
  package var maxDepth = 128
  package var maxBatch = 10_000
  /// `--threads`: 2 prepares saves on a second thread while the loop stores and answers
  /// (`SavePath`); the default where the machine has a second core.
  package var threads = Processors.online > 1 ? 2 : 1
  /// Testing: every batch of two messages or more goes to the second thread, and the loop lets it
  /// take the last quarter of the batch before it takes its own, so both threads surely take part.
  package var preparerHeadStart = false
  package var logLevel = LogLevel.warn
  package var logFormat = LogFormat.text
  package var domain = DomainLimits()
  package var trackBatchLimit = 75
  package var trackBatchMode = TrackBatchMode.combined
  package var delivery = DeliverySettings()
  /// `--braze-api-key-file`: read once the command line is parsed.
  package var apiKeyFile: String?
  package var fsync = FsyncPolicy.everysec
  package var store = StoreLimits()
  /// `--max-pending-age SECONDS`: `status.health` is degraded while the oldest pending item is older.
  package var maxPendingAge: Double?
  /// `--max-retry-age SECONDS`: `status.health` is degraded while delivery has failed for longer.
  package var maxRetryAge = 600.0
  package var fixedClock: Int64?
  package var idSeed: UInt64?
  /// `--metrics-listen HOST:PORT`: serve `GET /metrics` there.
  package var metricsListen: MetricsAddress?
  /// `--metrics-file PATH`: write the metrics there, atomically, each snapshot interval and at exit.
  package var metricsFile: String?
  /// `--drain-timeout SECONDS`: with `--deliver`, how long delivery goes on after stdin ends.
  package var drainTimeout = 30.0
  /// `deliver --max-seconds SECONDS`: how long the one-shot keeps retrying (nil: its eight passes).
  package var deliverMaxSeconds: Double?

  package init(storePath: String? = nil) { self.storePath = storePath }

  /// The directory to use, or nil when running in memory.
  package var effectiveStorePath: String? { memory ? nil : storePath }

  /// How the default store is chosen, for `--help` and the man page.
  package static let defaultStoreRule = "$XDG_STATE_HOME/push-outbox, else ~/.local/state/push-outbox"

  /// `$XDG_STATE_HOME/push-outbox` (when absolute), else `~/.local/state/push-outbox`.
  package static func defaultStorePath(env: (String) -> String?) -> String? {
    if let state = env("XDG_STATE_HOME"), state.hasPrefix("/") { return state + "/push-outbox" }
    guard let home = env("HOME"), !home.isEmpty else { return nil }
    return home + "/.local/state/push-outbox"
  }
}

/// A bad command line: printed as one line on stderr, exit code 2.
package struct UsageError: Error, Sendable, Equatable {
  package var message: String
  package init(_ message: String) { self.message = message }
}
