package import OutboxJSON
import OutboxSupport

/// Counters for `status.delivery` and the results of a pass.
struct DeliveryStats: Sendable {
  var delivered = 0
  var deadLettered = 0
  /// Seqs released after a failed attempt and not yet delivered.
  var retrying: Set<UInt64> = []
  var lastError: String?
  var configError: String?
  /// Wall-clock ms of the first failed request since the last delivery (nil: not failing).
  var failingSince: Int64?
  /// Answers from Braze by HTTP status ("error": no answer: a connection or timeout failure).
  var requests: [String: Int] = [:]
}

/// What delivery is doing, read-only, for `status` and `push-outbox deliver`.
package struct DeliverySummary: Sendable {
  package var background = false
  package var delivered = 0
  package var inFlight = 0
  /// Items a request failed for, still pending (to be retried).
  package var retrying = 0
  /// Wall-clock ms before which nothing is sent (after a failure or a stop).
  package var pausedUntil: Int64 = 0
  package var deadLettered = 0
  package var lastError: String?
  /// Why Braze refused the endpoint or key (401/403/404), until a request is delivered.
  package var configError: String?
  /// Wall-clock ms of the first failed request since the last delivery (nil: not failing).
  package var failingSince: Int64?
  package var rate = ""
  var recentRequests = 0
  /// `--braze-max-in-flight`: "auto" or the number.
  package var maxInFlight = "auto"
  /// Requests that may be in flight now, and the smoothed round trip (ms) of successful answers.
  package var concurrencyLimit = 1
  package var roundTripMs: Double?
  /// Requests sent and answered, by HTTP status code ("error" when no answer came back).
  package var requestsByCode: [String: Int] = [:]

  /// `status.delivery` at wall-clock `nowMs`.
  package func json(nowMs: Int64) -> JSONValue {
    .object([
      JSONMember("background", .bool(background)),
      JSONMember("delivered", .int(Int64(delivered))),
      JSONMember("inFlight", .int(Int64(inFlight))),
      JSONMember("retrying", .int(Int64(retrying))),
      JSONMember("nextAttemptAt", pausedUntil > nowMs ? .string(UTCTime.format(ms: pausedUntil)) : .null),
      JSONMember("deadLettered", .int(Int64(deadLettered))),
      JSONMember("lastError", lastError.map(JSONValue.string) ?? .null),
      JSONMember("configError", configError.map(JSONValue.string) ?? .null),
      JSONMember("rate", .string(rate)),
      JSONMember("recentRequests", .int(Int64(recentRequests))),
      JSONMember("maxInFlight", .string(maxInFlight)),
      JSONMember("concurrencyLimit", .int(Int64(concurrencyLimit))),
      JSONMember(
        "roundTripMs", roundTripMs.flatMap { $0.isFinite ? .number(String(($0 * 10).rounded() / 10)) : nil } ?? .null),
    ])
  }
}
