import OutboxSupport

/// The two text formats a scrape can ask for: Prometheus 0.0.4 (the default) and OpenMetrics 1.0
/// (when the `Accept` header names `application/openmetrics-text`).
package enum MetricsFormat: Sendable {
  case prometheus
  case openMetrics

  var contentType: String {
    switch self {
    case .prometheus: "text/plain; version=0.0.4; charset=utf-8"
    case .openMetrics: "application/openmetrics-text; version=1.0.0; charset=utf-8"
    }
  }

  /// The format an `Accept` header value asks for.
  package static func negotiate(accept: String?) -> MetricsFormat {
    guard let accept, accept.lowercased().contains("application/openmetrics-text") else { return .prometheus }
    return .openMetrics
  }
}

/// Renders a `MetricsSnapshot` as exposition text. Every family has HELP and TYPE lines.
package enum MetricsText {
  package static func render(_ s: MetricsSnapshot, format: MetricsFormat, nowMs: Int64) -> String {
    var w = Writer(format: format)
    w.family("push_outbox_saves_total", .counter, "Saves acknowledged since start, by item kind.")
    for (kind, n) in s.saves.sorted(by: { $0.key < $1.key }) {
      w.sample("push_outbox_saves_total", [("kind", kind)], n)
    }
    w.family("push_outbox_refused_total", .counter, "Save requests refused since start, by reason.")
    for (reason, n) in s.refused.sorted(by: { $0.key < $1.key }) {
      w.sample("push_outbox_refused_total", [("reason", reason)], n)
    }
    w.family("push_outbox_pending_items", .gauge, "Items held for delivery or flushing (dead letters not included).")
    w.sample("push_outbox_pending_items", [], UInt64(max(0, s.pendingItems)))
    w.family("push_outbox_pending_bytes", .gauge, "Bytes of the items held.")
    w.sample("push_outbox_pending_bytes", [], UInt64(max(0, s.pendingBytes)))
    w.family("push_outbox_oldest_pending_age_seconds", .gauge, "Age of the oldest pending item (0 when none).")
    let age = s.oldestPendingSavedAt.map { max(0, Double(nowMs - $0) / 1000) } ?? 0
    w.sample("push_outbox_oldest_pending_age_seconds", [], age)
    w.family("push_outbox_leased_items", .gauge, "Pending items a flush or a delivery request holds.")
    w.sample("push_outbox_leased_items", [], UInt64(max(0, s.leasedItems)))
    w.family("push_outbox_dead_letters", .gauge, "Dead letters held, by reason.")
    for (reason, n) in s.deadLetters.sorted(by: { $0.key < $1.key }) {
      w.sample("push_outbox_dead_letters", [("reason", reason)], UInt64(max(0, n)))
    }
    w.family("push_outbox_delivered_objects_total", .counter, "Objects Braze accepted since start.")
    w.sample("push_outbox_delivered_objects_total", [], s.deliveredObjects)
    w.family(
      "push_outbox_braze_requests_total", .counter,
      "Requests to Braze answered since start, by HTTP status (error: no answer).")
    for (code, n) in s.brazeRequests.sorted(by: { $0.key < $1.key }) {
      w.sample("push_outbox_braze_requests_total", [("code", code)], n)
    }
    if let delivery = s.delivery {
      w.family("push_outbox_delivery_in_flight", .gauge, "Requests to Braze in flight now.")
      w.sample("push_outbox_delivery_in_flight", [], UInt64(max(0, delivery.inFlight)))
      w.family(
        "push_outbox_delivery_concurrency_limit", .gauge,
        "Requests that may be in flight now (adaptive, or --braze-max-in-flight).")
      w.sample("push_outbox_delivery_concurrency_limit", [], UInt64(max(0, delivery.limit)))
      w.family(
        "push_outbox_delivery_round_trip_seconds", .gauge, "Smoothed round trip of Braze's successful answers.")
      w.sample("push_outbox_delivery_round_trip_seconds", [], delivery.roundTrip ?? 0)
    }
    w.family("push_outbox_store_bytes", .gauge, "Bytes of the store directory: segments, checkpoint, quarantine.")
    w.sample("push_outbox_store_bytes", [], UInt64(max(0, s.storeBytes)))
    if let cap = s.storeMaxBytes {
      w.family("push_outbox_store_max_bytes", .gauge, "The store directory's cap (--max-store-bytes).")
      w.sample("push_outbox_store_max_bytes", [], UInt64(max(0, cap)))
    }
    w.histogram("push_outbox_journal_fsync_seconds", "Time to fsync the journal.", s.journalFsync)
    w.histogram("push_outbox_snapshot_seconds", "Time to take a snapshot.", s.snapshot)
    w.family("push_outbox_health", .gauge, "0 ok, 1 degraded, 2 failing.")
    w.sample("push_outbox_health", [], UInt64(max(0, s.health)))
    w.family("push_outbox_problem", .gauge, "1 while status.problems lists this reason, else 0.")
    for reason in HealthReason.allCases {
      w.sample("push_outbox_problem", [("reason", reason.rawValue)], UInt64(s.problems.contains(reason) ? 1 : 0))
    }
    w.family("push_outbox_build_info", .info, "The running version (value 1).")
    w.sample("push_outbox_build_info", [("version", s.version)], UInt64(1))
    if format == .openMetrics { w.text += "# EOF\n" }
    return w.text
  }

  enum Kind: String { case counter, gauge, histogram, info }

  struct Writer {
    var format: MetricsFormat
    var text = ""

    /// HELP and TYPE; OpenMetrics names a counter's family without `_total` and an info's without `_info`.
    mutating func family(_ name: String, _ kind: Kind, _ help: String) {
      var family = name
      var type = kind.rawValue
      if format == .openMetrics {
        if kind == .counter, name.hasSuffix("_total") { family = String(name.dropLast(6)) }
        if kind == .info, name.hasSuffix("_info") { family = String(name.dropLast(5)) }
      } else if kind == .info {
        type = "gauge"
      }
      text += "# HELP \(family) \(help)\n# TYPE \(family) \(type)\n"
    }

    mutating func sample(_ name: String, _ labels: [(String, String)], _ value: UInt64) {
      line(name, labels, String(value))
    }

    mutating func sample(_ name: String, _ labels: [(String, String)], _ value: Double) {
      line(name, labels, number(value))
    }

    mutating func histogram(_ name: String, _ help: String, _ h: DurationHistogram.Value) {
      family(name, .histogram, help)
      var cumulative: UInt64 = 0
      for (bound, n) in zip(DurationHistogram.bounds, h.buckets) {
        cumulative &+= n
        line(name + "_bucket", [("le", number(bound))], String(cumulative))
      }
      line(name + "_bucket", [("le", "+Inf")], String(h.count))
      line(name + "_sum", [], number(h.sum))
      line(name + "_count", [], String(h.count))
    }

    private mutating func line(_ name: String, _ labels: [(String, String)], _ value: String) {
      text += name
      if !labels.isEmpty {
        text += "{" + labels.map { "\($0.0)=\"\(Self.escape($0.1))\"" }.joined(separator: ",") + "}"
      }
      text += " " + value + "\n"
    }

    private func number(_ x: Double) -> String {
      guard x.isFinite else { return x.isNaN ? "NaN" : x > 0 ? "+Inf" : "-Inf" }
      return "\(x)"
    }

    /// Label values: backslash, double quote and line feed escaped; other control bytes dropped.
    static func escape(_ value: String) -> String {
      var out = ""
      for ch in value.unicodeScalars {
        switch ch {
        case "\\": out += "\\\\"
        case "\"": out += "\\\""
        case "\n": out += "\\n"
        default: if ch.value >= 0x20 && ch.value != 0x7f { out.unicodeScalars.append(ch) }
        }
      }
      return out
    }
  }
}
