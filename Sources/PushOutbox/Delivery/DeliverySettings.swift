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
  package var maxInFlight = 4
  package var timeoutMs = 30_000
  package var connectTimeoutMs = 10_000
  /// The first retry waits about this long; each failure in a row doubles it, up to `maxBackoffMs`.
  package var backoffMs = 1_000
  package var maxBackoffMs = 300_000
  /// After 401, 403 or 404 delivery pauses this long.
  package var configErrorBackoffMs = 300_000

  package init() {}

  package var url: String? { endpoint.map { $0 + "/users/track" } }

  /// Checks an endpoint: `https://HOST…`, or `http://` only to a loopback host. Returns it without a trailing slash.
  package static func endpoint(_ text: String) throws(SettingError) -> String {
    guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
      throw SettingError("must be a URL without spaces or control characters")
    }
    var url = text
    while url.hasSuffix("/") { url.removeLast() }
    let lower = url.lowercased()
    if lower.hasPrefix("https://"), url.utf8.count > 8 { return url }
    guard lower.hasPrefix("http://") else { throw SettingError("must start with https://") }
    let rest = lower.dropFirst(7)
    let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    let host: Substring
    if authority.hasPrefix("[") {
      host = authority.prefix { $0 != "]" }.dropFirst()
    } else {
      host = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
    }
    guard ["localhost", "::1"].contains(String(host)) || isLoopbackIPv4(host) else {
      throw SettingError("plain http:// is refused except to a loopback host; use https://")
    }
    return url
  }
}

/// `127.a.b.c` written as four decimal octets.
private func isLoopbackIPv4(_ host: Substring) -> Bool {
  let parts = host.split(separator: ".", omittingEmptySubsequences: false)
  guard parts.count == 4, parts[0] == "127" else { return false }
  return parts.allSatisfy { part in
    part.count <= 3 && !part.isEmpty && part.allSatisfy(\.isASCII) && Int(part).map { $0 <= 255 } == true
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
