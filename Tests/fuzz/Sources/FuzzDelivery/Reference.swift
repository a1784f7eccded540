/// A strict reference for Braze endpoints, written from the README's rules without sharing code with
/// `EndpointURL`: `https://HOST[:PORT][/PATH]` or `http://` to `localhost`, `[::1]` or a 127.a.b.c
/// address in four decimal octets. HOST: dot-separated labels of 1–63 ASCII letters, digits and
/// inner hyphens (253 bytes at most), four decimal octets (no leading zeros), or a bracketed IPv6
/// address of hex digits, colons and dots. PORT: 1–65535 in at most five digits. PATH: printable
/// ASCII without `@ ? # % \`. Case is folded for the scheme and host; trailing slashes are dropped.
enum Reference {
  struct URL {
    var text: String
    var loopback: Bool
  }

  static func parse(_ input: String) -> URL? {
    let bytes = Array(input.utf8)
    guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }), !bytes.contains(where: { "@?#%\\".utf8.contains($0) })
    else { return nil }
    let lower = input.lowercased()
    let scheme: String
    if lower.hasPrefix("https://") {
      scheme = "https"
    } else if lower.hasPrefix("http://") {
      scheme = "http"
    } else {
      return nil
    }
    let afterScheme = Array(lower.utf8.dropFirst(scheme.count + 3))
    let original = Array(input.utf8.dropFirst(scheme.count + 3))
    let slash = afterScheme.firstIndex(of: UInt8(ascii: "/")) ?? afterScheme.count
    var path = Array(original[slash...])
    while path.last == UInt8(ascii: "/") { path.removeLast() }
    // A URL that names the method itself is refused (push-outbox adds /users/track).
    let lowered = String(decoding: path, as: UTF8.self).lowercased()
    guard !lowered.hasSuffix("/users/track"), !lowered.hasSuffix("/users/track/sync") else { return nil }
    guard let (host, port) = authority(Array(afterScheme[..<slash])) else { return nil }
    let loopback = host == "localhost" || host == "[::1]" || (host.hasPrefix("127.") && isAddress(host))
    guard scheme == "https" || loopback else { return nil }
    let text = scheme + "://" + host + (port.map { ":" + $0 } ?? "") + String(decoding: path, as: UTF8.self)
    return URL(text: text, loopback: loopback)
  }

  private static func authority(_ bytes: [UInt8]) -> (String, String?)? {
    var hostBytes = bytes
    var port: String? = nil
    let closing = bytes.lastIndex(of: UInt8(ascii: "]"))
    if let colon = bytes.lastIndex(of: UInt8(ascii: ":")), closing == nil || colon > closing! {
      let digits = bytes[(colon + 1)...]
      guard (1...5).contains(digits.count), digits.allSatisfy({ $0 >= 48 && $0 <= 57 }),
        let n = Int(String(decoding: digits, as: UTF8.self)), n >= 1, n <= 65_535
      else { return nil }
      port = String(n)
      hostBytes = Array(bytes[..<colon])
    }
    let host = String(decoding: hostBytes, as: UTF8.self)
    if host.hasPrefix("[") {
      let inner = host.dropFirst().dropLast()
      guard host.hasSuffix("]"), inner.contains(":"), inner.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." })
      else { return nil }
      return (host, port)
    }
    guard !host.isEmpty, host.utf8.count <= 253 else { return nil }
    let labels = host.split(separator: ".", omittingEmptySubsequences: false)
    for label in labels {
      guard (1...63).contains(label.count), label.first != "-", label.last != "-",
        label.allSatisfy({ ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "-" })
      else { return nil }
    }
    let numeric = host.allSatisfy { ($0 >= "0" && $0 <= "9") || $0 == "." }
    return numeric && !isAddress(host) ? nil : (host, port)
  }

  private static func isAddress(_ host: String) -> Bool {
    let parts = host.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 4 else { return false }
    return parts.allSatisfy { part in
      guard (1...3).contains(part.count), part.allSatisfy({ $0 >= "0" && $0 <= "9" }), let n = Int(part) else {
        return false
      }
      return n <= 255 && (part.count == 1 || part.first != "0")
    }
  }
}
