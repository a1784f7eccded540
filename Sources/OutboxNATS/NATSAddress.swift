/// `nats://HOST:PORT` (port 4222 when left out), and whether it may be used without TLS.
package struct NATSAddress: Sendable, Equatable, CustomStringConvertible {
  package var host: String
  package var port: UInt16

  package init(host: String, port: UInt16) {
    self.host = host
    self.port = port
  }

  /// Parses `nats://HOST[:PORT]` (IPv6 in brackets); nil with the reason otherwise.
  package static func parse(_ text: String) -> Result<NATSAddress, NATSError> {
    func refuse(_ why: String) -> Result<NATSAddress, NATSError> { .failure(NATSError(.refused, why)) }
    guard text.hasPrefix("nats://") else {
      return refuse(
        text.hasPrefix("tls://")
          ? "TLS is not supported yet: use nats:// to a loopback leaf node" : "needs nats://HOST:PORT")
    }
    var rest = Substring(text.dropFirst("nats://".count))
    if rest.hasSuffix("/") { rest = rest.dropLast() }
    guard !rest.contains("@"), !rest.contains("/") else {
      return refuse("needs nats://HOST:PORT, with no credentials or path (give them with --nats-creds)")
    }
    var host: Substring
    var portText: Substring?
    if rest.hasPrefix("[") {
      guard let close = rest.firstIndex(of: "]") else { return refuse("an IPv6 host needs its closing ]") }
      host = rest[rest.index(after: rest.startIndex)..<close]
      let after = rest[rest.index(after: close)...]
      if !after.isEmpty {
        guard after.hasPrefix(":") else { return refuse("needs nats://HOST:PORT") }
        portText = after.dropFirst()
      }
    } else if let colon = rest.lastIndex(of: ":") {
      host = rest[..<colon]
      portText = rest[rest.index(after: colon)...]
    } else {
      host = rest
    }
    guard !host.isEmpty, host.utf8.count <= 253 else { return refuse("needs a host") }
    var port: UInt16 = 4222
    if let portText {
      guard portText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let n = UInt16(portText), n > 0 else {
        return refuse("the port must be a number from 1 to 65535")
      }
      port = n
    }
    return .success(NATSAddress(host: String(host), port: port))
  }

  /// 127.0.0.0/8, ::1 or localhost: traffic that never leaves the machine.
  package var isLoopback: Bool {
    if host == "localhost" || host == "::1" { return true }
    let parts = host.split(separator: ".", omittingEmptySubsequences: false)
    return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
  }

  package var description: String { host.contains(":") ? "nats://[\(host)]:\(port)" : "nats://\(host):\(port)" }
}

/// A password or token: printed as `<redacted>`, and cut out of any text that quotes it.
package struct NATSSecret: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
  let value: String
  package init(_ value: String) { self.value = value }
  package var description: String { "<redacted>" }
  package var debugDescription: String { "<redacted>" }

  /// `text` with every occurrence of the secret (compared byte for byte) replaced by `<redacted>`.
  package func redact(_ text: String) -> String {
    let key = Array(value.utf8)
    let bytes = Array(text.utf8)
    guard !key.isEmpty, bytes.count >= key.count else { return text }
    var out: [UInt8] = []
    var index = 0
    while index < bytes.count {
      if bytes.count - index >= key.count && bytes[index..<(index + key.count)].elementsEqual(key) {
        out.append(contentsOf: "<redacted>".utf8)
        index += key.count
      } else {
        out.append(bytes[index])
        index += 1
      }
    }
    return String(decoding: out, as: UTF8.self)
  }
}

/// How the client proves who it is: a token, or a user and password (CONNECT's `auth_token`,
/// `user` and `pass`).
package enum NATSAuth: Sendable {
  case token(NATSSecret)
  case user(String, NATSSecret)

  var secret: NATSSecret {
    switch self {
    case .token(let s), .user(_, let s): s
    }
  }
}
