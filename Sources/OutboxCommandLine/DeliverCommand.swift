import OutboxDelivery
import OutboxDomain
import OutboxJSONRPC
import OutboxServer
import OutboxStore
import OutboxSupport

/// `push-outbox deliver [FLAGS]`: a one-shot for pipelines and cron. Opens the store (same flags,
/// same directory), delivers everything deliverable, prints one summary line on stderr (and a line
/// per pass when stderr is a terminal), and exits with a code a cron job can tell apart: 0 all
/// delivered, 5 nothing pending but some dead-lettered, 6 some still pending, 1 when Braze refused
/// the endpoint or key (401/403/404).
///
/// Transient failures (429, 5xx, timeouts) are retried after their backoff: without `--max-seconds`
/// for up to `maxRounds` passes, waiting at most `maxWaitMs` per pause; with it, until that many
/// seconds have passed (checked between passes and while waiting).
enum DeliverCommand {
  static let maxRounds = 8
  static let maxWaitMs: Int64 = 30_000

  /// Runs the one-shot and returns the exit code.
  package static func run(_ config: Configuration) -> ExitCode {
    _ = Signals.install()
    let service = Service(config: config)
    do { try service.openDisk() } catch {
      Log.stderr("push-outbox deliver: \(error.message)")
      return error.exit
    }
    defer { service.finish() }
    guard let delivery = service.delivery else {
      Log.stderr("push-outbox deliver: needs " + (config.missingDelivery ?? "--braze-endpoint and an API key"))
      return .usage
    }
    let terminal = isatty(2) == 1
    let deadline = config.deliverMaxSeconds.map { Clock.monotonicSeconds() + $0 }
    var total = Deliverer.PassResult()
    var round = 0
    while true {
      round += 1
      service.expireLeases()  // a client's lease that ran out gives its items to this pass
      let pass = delivery.runPass(max: Int.max)
      total.delivered += pass.delivered
      total.deadLettered += pass.deadLettered
      total.retrying = pass.retrying
      total.remaining = pass.remaining
      if terminal { Log.stderr("pass \(round): " + summary(pass)) }
      service.publishMetrics()  // --metrics-listen / --metrics-file between passes (at most every 100 ms)
      guard pass.retrying > 0 || pass.remaining > 0, delivery.summary.configError == nil, !StopRequest.isRequested
      else { break }
      if deadline == nil && round >= maxRounds { break }
      var wait = delivery.summary.pausedUntil - service.clock.now()
      if let deadline {
        let left = Int64((deadline - Clock.monotonicSeconds()) * 1000)
        guard left > 0 else { break }
        wait = min(max(wait, 50), left)  // a pass that sent nothing new waits a little before the next
      } else {
        guard wait <= maxWaitMs else { break }
      }
      let until = Clock.monotonicSeconds() + Double(max(0, wait)) / 1000
      while Clock.monotonicSeconds() < until && !StopRequest.isRequested {
        usleep(50_000)
        service.publishMetrics()
      }
      if let deadline, Clock.monotonicSeconds() >= deadline { break }
    }
    delivery.finish()
    total.retrying = delivery.failedStillPending
    total.remaining = service.store.count
    let line =
      "push-outbox deliver: " + summary(total)
      + (delivery.summary.configError.map { "; stopped: Braze answered \($0)" } ?? "")
      + (StopRequest.isRequested ? "; stopped by a signal" : "")
    Log.stderr(line)
    if delivery.summary.configError != nil { return .failure }
    if total.remaining > 0 { return .stillPending }
    return total.deadLettered > 0 ? .deadLettered : .success
  }

  /// Delivered, dead-lettered and still pending add up to what was pending; `retrying` counts the
  /// still-pending items whose request failed (they are retried by the next run).
  private static func summary(_ pass: Deliverer.PassResult) -> String {
    "delivered \(pass.delivered), dead-lettered \(pass.deadLettered), still pending \(pass.remaining)"
      + " (retrying \(pass.retrying))"
  }
}
