import OutboxDelivery
import OutboxDomain
import OutboxJSONRPC
import OutboxServer
import OutboxStore
import OutboxSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `push-outbox deliver [FLAGS]`: a one-shot for pipelines and cron. Opens the store (same flags,
/// same directory), delivers everything deliverable, prints one summary line on stderr (and a line
/// per pass when stderr is a terminal), and exits 0 when nothing is left retrying, 1 otherwise.
///
/// Transient failures (429, 5xx, timeouts) are retried after their backoff while it is short (up
/// to `maxRounds` passes, waiting at most `maxWaitMs` per pause); a 401/403/404 ends it at once.
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
    var total = Deliverer.PassResult()
    for round in 1...maxRounds {
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
      let wait = delivery.summary.pausedUntil - service.clock.now()
      guard wait <= maxWaitMs else { break }
      let until = Clock.monotonicSeconds() + Double(max(0, wait)) / 1000
      while Clock.monotonicSeconds() < until && !StopRequest.isRequested {
        usleep(50_000)
        service.publishMetrics()
      }
    }
    delivery.finish()
    total.retrying = delivery.failedStillPending
    total.remaining = service.store.count
    let line =
      "push-outbox deliver: " + summary(total)
      + (delivery.summary.configError.map { "; stopped: Braze answered \($0)" } ?? "")
      + (StopRequest.isRequested ? "; stopped by a signal" : "")
    Log.stderr(line)
    return total.retrying == 0 && total.remaining == 0 ? .success : .failure
  }

  /// Delivered, dead-lettered and still pending add up to what was pending; `retrying` counts the
  /// still-pending items whose request failed (they are retried by the next run).
  private static func summary(_ pass: Deliverer.PassResult) -> String {
    "delivered \(pass.delivered), dead-lettered \(pass.deadLettered), still pending \(pass.remaining)"
      + " (retrying \(pass.retrying))"
  }
}
