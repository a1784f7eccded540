/// A Braze REST endpoint, parsed once by one strict parser: its host decides whether plain `http://`
/// is allowed, and the URL libcurl is given is rebuilt from the same parts, so the host that was
/// checked is the host that receives the API key.
///
/// Accepted: `https://HOST[:PORT][/PATH]`, or `http://` to a loopback host (`localhost`, `127.a.b.c`
/// in four decimal octets, `[::1]`). HOST is an ASCII name of letters, digits, `-` and `.` (an
/// internationalized name in its `xn--` form), a dotted-decimal IPv4 address or a bracketed IPv6
/// address. Refused: userinfo (`user:pw@`), a query or fragment, percent-encoding, a trailing dot,
/// numeric hosts in any other form (`127.1`, `0x7f000001`) and anything outside printable ASCII.
package struct EndpointURL: Sendable, Equatable {
  package var secure: Bool
  /// Lowercased; an IPv6 address keeps its brackets.
  package var host: String
  package var port: Int?
  /// Empty, or starting with `/`, without a trailing slash.
  package var path: String

  /// The endpoint as libcurl receives it (plus the method's path).
  package var text: String {
    (secure ? "https://" : "http://") + host + (port.map { ":\($0)" } ?? "") + path
  }

  var isLoopback: Bool {
    host == "localhost" || host == "[::1]" || (host.hasPrefix("127.") && Self.isDottedDecimal(host[...]))
  }

  package init(_ text: String) throws(SettingError) {
    guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
      throw SettingError("must be a URL without spaces, control characters or non-ASCII characters")
    }
    let lower = text.lowercased()
    guard let scheme = ["https://", "http://"].first(where: lower.hasPrefix) else {
      throw SettingError("must start with https://")
    }
    secure = scheme == "https://"
    let rest = text.dropFirst(scheme.count)
    guard !rest.contains(where: { "@?#%\\".contains($0) }) else {
      throw SettingError("must not contain userinfo (@), a query (?), a fragment (#), % or \\")
    }
    let authority = rest.prefix { $0 != "/" }
    var path = String(rest.dropFirst(authority.count))
    while path.hasSuffix("/") { path.removeLast() }
    for method in ["/users/track/sync", "/users/track"] where path.lowercased().hasSuffix(method) {
      let base = text.prefix(scheme.count + authority.count) + path.dropLast(method.count)
      throw SettingError(
        "names the method (\(method)); give the base URL, \(base): push-outbox adds /users/track itself")
    }
    self.path = path
    (host, port) = try Self.authority(authority.lowercased()[...])
    guard secure || isLoopback else {
      throw SettingError("plain http:// is refused except to a loopback host; use https://")
    }
  }

  private static func authority(_ text: Substring) throws(SettingError) -> (String, Int?) {
    var hostPart = text
    var port: Int? = nil
    let close = text.firstIndex(of: "]")
    if let colon = text.lastIndex(of: ":"), close.map({ colon > $0 }) ?? true {
      hostPart = text[..<colon]
      let digits = text[text.index(after: colon)...]
      guard digits.count <= 5, digits.allSatisfy(\.isNumber), let n = Int(digits), (1...65_535).contains(n) else {
        throw SettingError("has a port that is not a number from 1 to 65535")
      }
      port = n
    }
    guard isHost(hostPart) else { throw SettingError("has no valid host name or address") }
    return (String(hostPart), port)
  }

  private static func isHost(_ host: Substring) -> Bool {
    if host.hasPrefix("[") {
      let inside = host.dropFirst().dropLast()
      return host.hasSuffix("]") && inside.contains(":")
        && inside.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
    }
    let labels = host.split(separator: ".", omittingEmptySubsequences: false)
    guard !host.isEmpty, host.count <= 253, labels.allSatisfy(isLabel) else { return false }
    // A name of digits and dots is an address: only four decimal octets are unambiguous.
    return !host.allSatisfy({ $0.isNumber || $0 == "." }) || isDottedDecimal(host)
  }

  private static func isLabel(_ label: Substring) -> Bool {
    (1...63).contains(label.count) && label.first != "-" && label.last != "-"
      && label.allSatisfy { ($0.isASCII && $0.isLetter) || ($0.isASCII && $0.isNumber) || $0 == "-" }
  }

  static func isDottedDecimal(_ host: Substring) -> Bool {
    let parts = host.split(separator: ".", omittingEmptySubsequences: false)
    return parts.count == 4
      && parts.allSatisfy { part in
        (1...3).contains(part.count) && part.allSatisfy(\.isNumber) && (part.count == 1 || part.first != "0")
          && Int(part).map { $0 <= 255 } == true
      }
  }
}
