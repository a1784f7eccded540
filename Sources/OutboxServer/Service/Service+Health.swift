import OutboxDelivery
package import OutboxJSON
import OutboxStore
import OutboxSupport

/// `status.health` and `status.problems`, and `push_outbox_health` / `push_outbox_problem{reason}`:
/// one evaluation for both.
package enum HealthState: String, Sendable {
  case ok, degraded, failing

  /// The `push_outbox_health` value.
  package var gauge: Int {
    switch self {
    case .ok: 0
    case .degraded: 1
    case .failing: 2
    }
  }
}

/// Why health is not ok (`status.problems[].reason`, `push_outbox_problem{reason}`).
package enum HealthReason: String, CaseIterable, Sendable {
  case journalFailing = "journal_failing"
  case dataQuarantined = "data_quarantined"
  case storeNearCap = "store_near_cap"
  case deliveryStopped = "delivery_stopped"
  case deliveryRetrying = "delivery_retrying"
  case pendingTooOld = "pending_too_old"
}

/// One thing wrong: `{reason, since, detail}` in `status.problems`.
package struct HealthProblem: Sendable, Equatable {
  package var reason: HealthReason
  /// Wall-clock ms: when the condition began, where the state says, else when it was first seen.
  package var since: Int64
  package var detail: String
  package var failing = false

  package var json: JSONValue {
    .object([
      JSONMember("reason", .string(reason.rawValue)), JSONMember("since", .string(UTCTime.format(ms: since))),
      JSONMember("detail", .string(detail)),
    ])
  }
}

/// When each problem whose start the state does not record was first seen (`Service.observeHealth`).
package struct HealthMemory: Sendable {
  var firstSeen: [HealthReason: Int64] = [:]
  var observedAt: Int64? = nil

  package init() {}
}

extension Service {
  /// The store at this share of the bytes saves may use (`--max-store-bytes` minus the headroom).
  static let nearCapShare = 0.9

  /// The health and its problems now; `oldestPendingSavedAt` when the caller knows it already.
  package func health(now: Int64, oldestPendingSavedAt: Int64?? = nil) -> (HealthState, [HealthProblem]) {
    var problems: [HealthProblem] = []
    for (reason, detail, failing) in observedConditions() {
      problems.append(
        HealthProblem(reason: reason, since: healthMemory.firstSeen[reason] ?? now, detail: detail, failing: failing))
    }
    if let summary = delivery?.summary, summary.configError == nil, let since = summary.failingSince,
      Double(now - since) > config.maxRetryAge * 1000
    {
      let detail = "delivery has failed since \(UTCTime.format(ms: since)): \(summary.lastError ?? "no answer")"
      problems.append(HealthProblem(reason: .deliveryRetrying, since: since, detail: detail))
    }
    if let maxAge = config.maxPendingAge, let saved = oldestPendingSavedAt ?? store.items.oldestPendingSavedAt,
      Double(now - saved) > maxAge * 1000
    {
      let detail =
        "the oldest pending item was saved at \(UTCTime.format(ms: saved)), over --max-pending-age \(maxAge) s ago"
      problems.append(HealthProblem(reason: .pendingTooOld, since: saved + Int64(maxAge * 1000), detail: detail))
    }
    let state: HealthState =
      problems.contains(where: \.failing) ? .failing : problems.isEmpty ? .ok : .degraded
    return (state, problems)
  }

  /// Notes when each condition began (called from `tick`, at most every 250 ms, and by `health`).
  package func observeHealth(now: Int64) {
    if let last = healthMemory.observedAt, now >= last, now - last < 250 { return }
    healthMemory.observedAt = now
    let active = observedConditions().map(\.0)
    for reason in active where healthMemory.firstSeen[reason] == nil { healthMemory.firstSeen[reason] = now }
    for reason in healthMemory.firstSeen.keys where !active.contains(reason) {
      healthMemory.firstSeen[reason] = nil
    }
  }

  /// The conditions whose start is only known by watching: (reason, detail, failing).
  private func observedConditions() -> [(HealthReason, String, Bool)] {
    var found: [(HealthReason, String, Bool)] = []
    if store.lastCommitFailed || disk?.fsyncFailed == true {
      let what = store.lastCommitFailed ? store.lastCommitError : disk?.lastFsyncError
      found.append((.journalFailing, "the journal cannot be written or flushed: \(what ?? "unknown")", true))
    }
    let warnings = (disk?.status.recovery ?? []) + store.notices
    if !warnings.isEmpty {
      let codes = warnings.compactMap { value -> String? in
        if case .object(let members) = value, case .string(let code)? = members["code"] { return code }
        return nil
      }
      found.append(
        (.dataQuarantined, "since start: " + codes.joined(separator: ", ") + " (see status.recovery)", false))
    }
    if let usable = store.usableStoreBytes, let cap = store.cap,
      Double(store.storeBytes) >= Self.nearCapShare * Double(usable)
    {
      let detail =
        "the store holds \(store.storeBytes) bytes of the \(usable) saves may use (--max-store-bytes \(cap.max) less the snapshot headroom)"
      found.append((.storeNearCap, detail, false))
    }
    if let reason = delivery?.summary.configError {
      found.append((.deliveryStopped, "Braze refused the endpoint or key: \(reason)", false))
    }
    return found
  }
}
