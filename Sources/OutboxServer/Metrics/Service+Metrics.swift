import OutboxDelivery
import OutboxStore
import OutboxSupport

/// `--metrics-listen` and `--metrics-file`: where the loop's snapshot goes.
package final class MetricsExport {
  let board: MetricsBoard
  let listener: MetricsListener?
  /// `--metrics-file`, written off the loop.
  let file: MetricsFileWriter?
  /// Monotonic seconds of the last publish, and of the last file write.
  var publishedAt = -Double.infinity
  var writtenAt = -Double.infinity
  /// `Service.metricsFingerprint` at the last publish.
  var fingerprint: (UInt64, UInt64) = (.max, .max)
  /// The dead letters by reason and the oldest pending item, kept while the store's version holds.
  var cachedVersion: UInt64 = .max
  var cachedDead: [String: Int] = [:]
  var cachedOldest: Int64? = nil

  init(board: MetricsBoard, listener: MetricsListener?, file: String?) {
    self.board = board
    self.listener = listener
    self.file = file.map(MetricsFileWriter.init(path:))
  }

  /// The loop publishes at most this often.
  static let publishInterval = 0.1
  /// How long the exit waits for the last metrics file write.
  static let exitWriteSeconds = 2.0
}

extension Service {
  /// Starts what `--metrics-listen` and `--metrics-file` ask for (called by `openDisk`).
  func startMetrics() throws(StartupError) {
    guard config.metricsListen != nil || config.metricsFile != nil else { return }
    let board = MetricsBoard(clock: clock)
    var listener: MetricsListener? = nil
    if let address = config.metricsListen {
      listener = try MetricsListener(address, board: board)
      if !address.isLoopback {
        log.warn("metrics served on \(address.host), not a loopback address: anyone who can reach it can read them")
      }
      log.info("metrics on http://\(address.v6 ? "[\(address.host)]" : address.host):\(listener!.port)/metrics")
    }
    metrics = MetricsExport(board: board, listener: listener, file: config.metricsFile)
    publishMetrics(force: true)
  }

  /// What changes the published figures: the store's version and the counters' events.
  private var metricsFingerprint: (UInt64, UInt64) { (store.version, counters.events) }

  /// Publishes a new snapshot when 100 ms have passed (or `force`), and writes the metrics file
  /// once per snapshot interval. Called by `tick` and `finish`.
  package func publishMetrics(force: Bool = false) {
    guard let metrics else { return }
    let now = Clock.monotonicSeconds()
    guard force || now - metrics.publishedAt >= MetricsExport.publishInterval else { return }
    metrics.publishedAt = now
    metrics.fingerprint = metricsFingerprint
    let snapshot = makeMetricsSnapshot(metrics)
    metrics.board.publish(snapshot)
    if let file = metrics.file, force || now - metrics.writtenAt >= config.snapshotInterval {
      metrics.writtenAt = now
      if !file.submit(MetricsText.render(snapshot, format: .prometheus, nowMs: clock.now())) {
        log.warn("cannot write the metrics file \(file.path)")
      }
    }
  }

  /// At exit: the last metrics file write gets a short while to land (it runs off the loop, and a
  /// hung file system must not hold the exit).
  func finishMetrics() {
    guard let file = metrics?.file, !file.drain(seconds: MetricsExport.exitWriteSeconds) else { return }
    log.warn("the metrics file \(file.path) was not written at exit")
  }

  /// Milliseconds until a publish is due for changes not yet published, or -1.
  func metricsPollTimeoutMs() -> Int32 {
    guard let metrics, metrics.fingerprint != metricsFingerprint || metrics.file != nil else { return -1 }
    let elapsed = Clock.monotonicSeconds() - metrics.publishedAt
    var wait = max(0, MetricsExport.publishInterval - elapsed)
    if metrics.file != nil, metrics.fingerprint == metricsFingerprint {
      wait = max(0, config.snapshotInterval - (Clock.monotonicSeconds() - metrics.writtenAt))
    }
    return Int32(clamping: Int(wait * 1000) + 1)
  }

  private func makeMetricsSnapshot(_ metrics: MetricsExport) -> MetricsSnapshot {
    let items = store.items
    var s = MetricsSnapshot()
    for kind in ItemKind.allCases { s.saves[kind.wireName] = counters.saves[Int(kind.rawValue)] }
    for reason in MetricCounters.knownReasons { s.refused[reason] = 0 }
    for (reason, n) in counters.refused { s.refused[reason] = n }
    s.pendingItems = items.counts.reduce(0, +)
    s.pendingBytes = items.bytes
    s.leasedItems = items.leasedCount
    if metrics.cachedVersion != store.version {
      metrics.cachedVersion = store.version
      var dead: [String: Int] = [:]
      for reason in items.deadReasons.values {
        let label = reason.count > 64 ? String(reason.prefix(64)) : reason
        if dead[label] == nil && dead.count >= 32 {
          dead["other", default: 0] += 1
        } else {
          dead[label, default: 0] += 1
        }
      }
      metrics.cachedDead = dead
      let table = items.table
      metrics.cachedOldest = nil
      for row in table.rows where !table.has(.removed, row) && items.deadReasons[table.seqs[row]] == nil {
        metrics.cachedOldest = table.savedAt[row]
        break
      }
    }
    s.deadLetters = metrics.cachedDead
    s.oldestPendingSavedAt = metrics.cachedOldest
    let summary = delivery?.summary
    s.deliveredObjects = UInt64(max(0, summary?.delivered ?? 0))
    for (code, n) in summary?.requestsByCode ?? [:] { s.brazeRequests[code] = UInt64(max(0, n)) }
    s.delivery = summary.map { ($0.inFlight, $0.concurrencyLimit, $0.roundTripMs.map { $0 / 1000 }) }
    s.storeBytes = Int64(store.storeBytes)
    s.storeMaxBytes = disk == nil ? nil : store.cap.map { Int64($0.max) }
    s.journalFsync = DurationHistogram.journalFsync.value
    s.snapshot = DurationHistogram.snapshot.value
    let (health, problems) = health(now: clock.now(), oldestPendingSavedAt: .some(metrics.cachedOldest))
    s.health = health.gauge
    s.problems = Set(problems.map(\.reason))
    s.version = embeddedVersion
    return s
  }
}
