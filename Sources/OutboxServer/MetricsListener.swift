import Dispatch
package import OutboxStore
import OutboxSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `--metrics-listen HOST:PORT`: an address to serve `GET /metrics` on.
package struct MetricsAddress: Sendable, Equatable {
  package var host: String
  package var port: UInt16
  /// IPv6 (the host was written in brackets).
  package var v6: Bool

  /// `PORT`, `:PORT` (both on 127.0.0.1), `IPV4:PORT`, `[IPV6]:PORT` or `localhost:PORT`. Only
  /// numeric addresses: nothing is looked up.
  package static func parse(_ text: String) -> MetricsAddress? {
    var host = "127.0.0.1"
    var portText = Substring(text)
    var v6 = false
    if text.hasPrefix("[") {
      guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
      host = String(text[text.index(after: text.startIndex)..<close])
      portText = text[text.index(close, offsetBy: 2)...]
      v6 = true
    } else if let colon = text.lastIndex(of: ":") {
      if colon != text.startIndex { host = String(text[..<colon]) }
      portText = text[text.index(after: colon)...]
    }
    if host == "localhost" { host = "127.0.0.1" }
    guard !portText.isEmpty, portText.utf8.count <= 5, portText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
      let port = UInt16(portText)
    else { return nil }
    var address = MetricsAddress(host: host, port: port, v6: v6)
    guard address.sockaddr() != nil else { return nil }
    address.host = host
    return address
  }

  /// 127.0.0.0/8, ::1, or IPv4-mapped loopback (::ffff:127.0.0.0/104), judged on the parsed bytes.
  package var isLoopback: Bool {
    guard let storage = sockaddr() else { return false }
    return withUnsafeBytes(of: storage) { raw in
      if !v6 { return raw[4] == 127 }  // sin_addr follows the family and the port
      let a = Array(raw[8..<24])  // sin6_addr follows the family, the port and the flow info
      let loopback6 = a[0..<15].allSatisfy { $0 == 0 } && a[15] == 1
      let mapped = a[0..<10].allSatisfy { $0 == 0 } && a[10] == 0xff && a[11] == 0xff && a[12] == 127
      return loopback6 || mapped
    }
  }

  fileprivate func sockaddr() -> sockaddr_storage? {
    var storage = sockaddr_storage()
    if v6 {
      var a = sockaddr_in6()
      a.sin6_family = sa_family_t(AF_INET6)
      a.sin6_port = port.bigEndian
      guard inet_pton(AF_INET6, host, &a.sin6_addr) == 1 else { return nil }
      withUnsafeBytes(of: a) { raw in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: raw) } }
    } else {
      var a = sockaddr_in()
      a.sin_family = sa_family_t(AF_INET)
      a.sin_port = port.bigEndian
      guard inet_pton(AF_INET, host, &a.sin_addr) == 1 else { return nil }
      withUnsafeBytes(of: a) { raw in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: raw) } }
    }
    return storage
  }
}

/// The HTTP side of `/metrics`: one background thread accepting one connection at a time and
/// answering it from the `MetricsBoard`, never touching the loop's state.
///
/// Hostile input is bounded: a request head over 8 KiB gets 400, a client gets 2 seconds in all to
/// send its head (a slow one is cut off; the next waits at most that long), and every answer closes
/// the connection. `GET /metrics` (or `HEAD`) → 200; any other well-formed request → 404; anything
/// unparsable → 400.
package final class MetricsListener: Sendable {
  static let maxRequestBytes = 8192
  static let requestSeconds = 2.0

  private let fd: Int32
  package let port: UInt16
  private let board: MetricsBoard

  /// Binds and listens, then serves on a background thread for the life of the process.
  package init(_ address: MetricsAddress, board: MetricsBoard) throws(StartupError) {
    guard var storage = address.sockaddr() else {
      throw .refused("metrics_unavailable", "--metrics-listen: not an address: \(address.host)")
    }
    let family = address.v6 ? AF_INET6 : AF_INET
    #if canImport(Darwin)
    let fd = socket(family, SOCK_STREAM, 0)
    #else
    let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    #endif
    guard fd >= 0 else { throw .refused("metrics_unavailable", "--metrics-listen: socket: \(errnoText(errno))") }
    var one: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    let length = socklen_t(address.v6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    guard bound == 0, listen(fd, 16) == 0 else {
      let text = errnoText(errno)
      close(fd)
      throw .refused(
        "metrics_unavailable", "--metrics-listen: cannot listen on \(address.host):\(address.port): \(text)")
    }
    var actual = sockaddr_storage()
    var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
    _ = withUnsafeMutablePointer(to: &actual) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &actualLength) }
    }
    let port: UInt16 = withUnsafeBytes(of: actual) { raw in
      address.v6
        ? UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self))
        : UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self))
    }
    self.fd = fd
    self.port = port
    self.board = board
    let listener = self
    DispatchQueue(label: "push-outbox.metrics").async { listener.serve() }
  }

  private func serve() {
    while true {
      let client = accept(fd, nil, nil)
      if client < 0 {
        if errno == EINTR || errno == ECONNABORTED { continue }
        usleep(10_000)  // EMFILE and the like: wait, never spin or stop
        continue
      }
      #if canImport(Darwin)
      var one: Int32 = 1
      setsockopt(client, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
      #endif
      answer(client)
      close(client)
    }
  }

  private func answer(_ client: Int32) {
    let deadline = Clock.monotonicSeconds() + Self.requestSeconds
    var head: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 2048)
    while !Self.endsHead(head) {
      guard head.count <= Self.maxRequestBytes else { return reply(client, 400, "request too large\n") }
      let left = deadline - Clock.monotonicSeconds()
      guard left > 0 else { return reply(client, 400, "request timed out\n") }
      var p = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
      let ready = poll(&p, 1, Int32(max(1, left * 1000)))
      if ready < 0 && errno == EINTR { continue }
      guard ready > 0 else { return reply(client, 400, "request timed out\n") }
      let n = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
      if n < 0 && errno == EINTR { continue }
      guard n > 0 else { return }
      head.append(contentsOf: chunk[0..<n])
    }
    guard head.count <= Self.maxRequestBytes, let request = Self.parse(head) else {
      return reply(client, 400, "bad request\n")
    }
    let path = request.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
    guard request.method == "GET" || request.method == "HEAD", path == "/metrics" else {
      return reply(client, 404, "not found; try GET /metrics\n")
    }
    let format = MetricsFormat.negotiate(accept: request.accept)
    reply(client, 200, board.text(format), type: format.contentType, head: request.method == "HEAD")
  }

  /// True once the bytes hold a blank line (the end of the request head).
  private static func endsHead(_ bytes: [UInt8]) -> Bool {
    guard bytes.count >= 2 else { return false }
    var i = 1
    while i < bytes.count {
      if bytes[i] == 10 && (bytes[i - 1] == 10 || (i >= 2 && bytes[i - 1] == 13 && bytes[i - 2] == 10)) { return true }
      i += 1
    }
    return false
  }

  /// The request line and the `Accept` header, or nil when the head is not HTTP/1.x.
  static func parse(_ head: [UInt8]) -> (method: String, target: String, accept: String?)? {
    guard head.allSatisfy({ $0 == 9 || $0 == 10 || $0 == 13 || ($0 >= 32 && $0 < 127) }) else { return nil }
    // Bytes, not Characters: "\r\n" is one Character in Swift.
    let lines = head.split(separator: 10, omittingEmptySubsequences: false).map { line in
      String(decoding: line.last == 13 ? line.dropLast() : line, as: UTF8.self)
    }
    guard let first = lines.first else { return nil }
    let parts = first.split(separator: " ", omittingEmptySubsequences: false)
    guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy({ $0.isUppercase }), parts[1].hasPrefix("/"),
      parts[2] == "HTTP/1.1" || parts[2] == "HTTP/1.0"
    else { return nil }
    var accept: String? = nil
    for line in lines.dropFirst() where !line.isEmpty {
      guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else { return nil }
      if line[..<colon].lowercased() == "accept" {
        accept = (accept.map { $0 + "," } ?? "") + line[line.index(after: colon)...]
      }
    }
    return (String(parts[0]), String(parts[1]), accept)
  }

  private func reply(
    _ client: Int32, _ status: Int, _ body: String, type: String = "text/plain; charset=utf-8",
    head: Bool = false
  ) {
    let reason = status == 200 ? "OK" : status == 404 ? "Not Found" : "Bad Request"
    let bytes = Array(body.utf8)
    var out = Array(
      "HTTP/1.1 \(status) \(reason)\r\nContent-Type: \(type)\r\nContent-Length: \(bytes.count)\r\nConnection: close\r\n\r\n"
        .utf8)
    if !head { out += bytes }
    var done = 0
    let deadline = Clock.monotonicSeconds() + Self.requestSeconds
    while done < out.count, Clock.monotonicSeconds() < deadline {
      var p = pollfd(fd: client, events: Int16(POLLOUT), revents: 0)
      guard poll(&p, 1, 500) > 0 else { continue }
      #if canImport(Darwin)
      let flags: Int32 = 0
      #else
      let flags = Int32(MSG_NOSIGNAL)
      #endif
      let n = out.withUnsafeBytes { send(client, $0.baseAddress! + done, $0.count - done, flags) }
      if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
      guard n > 0 else { return }
      done += n
    }
  }
}
