import OutboxStore
package import OutboxSupport

/// What `/metrics` and `--metrics-file` show: a plain value the request loop builds from its own
/// state (at most every 100 ms, in `Service.tick`) and hands over whole; see `MetricsBoard`.
package struct MetricsSnapshot: Sendable {
  /// Acknowledged saves per item kind (wire name), since start.
  package var saves: [String: UInt64] = [:]
  /// Refused save requests by reason, since start.
  package var refused: [String: UInt64] = [:]
  package var pendingItems = 0
  var pendingBytes = 0
  /// When the oldest pending item was saved (wall-clock ms); nil when nothing is pending.
  var oldestPendingSavedAt: Int64?
  var leasedItems = 0
  package var deadLetters: [String: Int] = [:]
  var deliveredObjects: UInt64 = 0
  var brazeRequests: [String: UInt64] = [:]
  /// Delivery's requests in flight, its concurrency limit and smoothed round trip (seconds); nil
  /// without delivery.
  var delivery: (inFlight: Int, limit: Int, roundTrip: Double?)?
  /// The whole store directory (`Store.storeBytes`), and `--max-store-bytes` when set.
  package var storeBytes: Int64 = 0
  var storeMaxBytes: Int64?
  package var journalFsync = DurationHistogram.Value()
  package var snapshot = DurationHistogram.Value()
  /// 0 ok, 1 degraded, 2 failing.
  var health = 0
  /// The reasons of `status.problems` now.
  var problems: Set<HealthReason> = []
  package var version = ""

  package init() {}
}

/// The counters the request loop keeps for `/metrics`: plain integers on the loop's thread, only ever
/// incremented (wrapping, never trapping), so they never go down for the life of the process.
package struct MetricCounters: Sendable {
  package var saves = [UInt64](repeating: 0, count: ItemKind.allCases.count)
  package var refused: [String: UInt64] = [:]
  /// Changes since start (any save acknowledged or refused): tells the loop a publish is due.
  package var events: UInt64 = 0

  package init() {}

  mutating func countSave(_ kind: ItemKind) { countSaves(kind, 1) }

  mutating func countSaves(_ kind: ItemKind, _ count: Int) {
    saves[Int(kind.rawValue)] &+= UInt64(count)
    events &+= UInt64(count)
  }

  mutating func countRefusal(_ reason: String) {
    refused[reason, default: 0] &+= 1
    events &+= 1
  }

  /// The metric label for a refused save: one per error code, so the label set stays small.
  package static func reason(_ code: Int) -> String {
    switch code {
    case -32602: "invalid_params"
    case -32001: "store_full"
    case -32002: "item_too_large"
    case -32003: "storage_unavailable"
    case -32600: "invalid_request"
    default: "other"
    }
  }

  /// The reasons always shown, at 0 until one happens.
  static let knownReasons = ["invalid_params", "store_full", "item_too_large", "storage_unavailable"]
}
