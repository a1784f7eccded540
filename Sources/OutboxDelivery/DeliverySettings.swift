/// How push-outbox delivers to Braze (`--braze-endpoint`, `--deliver`, `--braze-rate`, …).
package struct DeliverySettings: Sendable {
  /// The REST endpoint without a trailing slash, e.g. `https://rest.iad-01.braze.com`.
  package var endpoint: String?
  /// From `$BRAZE_API_KEY` or `--braze-api-key-file`; never from a flag value.
  package var apiKey: Secret?
  /// `--deliver`: deliver in the background while serving.
  package var background = false
  /// At most `rate.count` requests start in any `rate.seconds` window.
  package var rate = RateLimit(count: 500, seconds: 1)
  /// `--braze-max-in-flight N`: a fixed number of requests in flight; nil (`auto`, the default):
  /// the adaptive limit up to `ConcurrencyLimit.autoCeiling` (see `ConcurrencyLimit`).
  package var maxInFlight: Int?
  package var timeoutMs = 30_000
  var connectTimeoutMs = 10_000
  /// The first retry waits about this long; each failure in a row doubles it, up to `maxBackoffMs`.
  package var backoffMs = 1_000
  package var maxBackoffMs = 300_000
  /// After 401, 403 or 404 delivery pauses this long.
  var configErrorBackoffMs = 300_000

  package init() {}

  package var url: String? { endpoint.map { $0 + "/users/track" } }

  /// Checks an endpoint (see `EndpointURL`) and returns it as libcurl will receive it, without a
  /// trailing slash.
  package static func endpoint(_ text: String) throws(SettingError) -> String {
    try EndpointURL(text).text
  }
}

/// `N/S`: at most N requests in any S seconds.
package struct RateLimit: Sendable, Equatable {
  package var count: Int
  package var seconds: Double

  package init(count: Int, seconds: Double) {
    self.count = count
    self.seconds = seconds
  }

  package init(_ text: String) throws(SettingError) {
    let parts = text.split(separator: "/", omittingEmptySubsequences: false)
    guard parts.count == 2, let count = Int(parts[0]), count >= 1, let seconds = Double(parts[1]), seconds.isFinite,
      seconds >= 0.001, seconds <= 86_400
    else { throw SettingError("needs N/S: at most N requests per S seconds, such as 1000/3") }
    self.count = count
    self.seconds = seconds
  }

  package var text: String {
    seconds == seconds.rounded() ? "\(count)/\(Int(seconds))" : "\(count)/\(seconds)"
  }
}

/// A bad delivery setting; the command line reports it as a usage error.
package struct SettingError: Error, Sendable, CustomStringConvertible {
  package var description: String
  package init(_ message: String) { description = message }
}
