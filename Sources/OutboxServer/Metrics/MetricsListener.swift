import Dispatch
package import OutboxStore
import OutboxSupport

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

/// The HTTP side of `/metrics`: one background thread serving every connection at once with
/// `poll`, answering from the `MetricsBoard`, never touching the loop's state.
///
/// Hostile input is bounded: at most `maxConnections` are open (a new one closes the oldest), each
/// gets 2 seconds from its accept to send its request head (else 408) and at most 8 KiB for it (else
/// 431), so neither slow nor many clients keep a scrape waiting. Only the head is read; each
/// connection gets one answer with `Connection: close`, and whatever follows the head (a pipelined
/// request, a body) is discarded unread (`MetricsConnection`). `GET /metrics` (or `HEAD`) → 200;
/// any other well-formed request → 404; anything unparsable → 400.
package final class MetricsListener: Sendable {
  static let maxConnections = 64

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
    guard bound == 0, listen(fd, 128) == 0, fcntl(fd, F_SETFL, O_NONBLOCK) == 0 else {
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
    var connections: [MetricsConnection] = []
    while true {
      var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
      fds += connections.map { pollfd(fd: $0.fd, events: $0.events, revents: 0) }
      let ready = poll(&fds, nfds_t(fds.count), Self.pollTimeoutMs(connections))
      if ready < 0 && errno != EINTR { usleep(10_000) }  // never spin
      let now = Clock.monotonicSeconds()
      for i in connections.indices where fds[i + 1].revents != 0 || now >= connections[i].deadline {
        connections[i].step(now: now) { answer($0) }
      }
      connections.removeAll { $0.phase == .closed }
      if fds[0].revents != 0 { acceptWaiting(into: &connections, now: now) }
    }
  }

  /// Milliseconds until the nearest connection's deadline (-1: none open).
  private static func pollTimeoutMs(_ connections: [MetricsConnection]) -> Int32 {
    guard let nearest = connections.map(\.deadline).min() else { return -1 }
    return Int32(clamping: Int(max(0, nearest - Clock.monotonicSeconds()) * 1000) + 1)
  }

  /// Takes every waiting connection, non-blocking; when full, the oldest open one makes room.
  private func acceptWaiting(into connections: inout [MetricsConnection], now: Double) {
    while true {
      let client = accept(fd, nil, nil)
      if client < 0 {
        if errno == EINTR || errno == ECONNABORTED { continue }
        // EAGAIN: none left. EMFILE and the like: wait a little, or the next poll returns at once.
        if errno != EAGAIN && errno != EWOULDBLOCK { usleep(10_000) }
        return
      }
      _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
      _ = fcntl(client, F_SETFD, FD_CLOEXEC)
      #if canImport(Darwin)
      var one: Int32 = 1
      setsockopt(client, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
      #endif
      if connections.count >= Self.maxConnections {
        connections[0].drop()  // the oldest: they are kept in accept order
        connections.removeFirst()
      }
      connections.append(MetricsConnection(fd: client, now: now))
    }
  }

  /// The whole answer to what a connection sent: 200, 404, 400, 408 (head not in time), 431.
  private func answer(_ parsed: HTTPRequestHead.Parse) -> [UInt8] {
    switch parsed {
    case .incomplete: return Self.reply(408, "request timed out\n")
    case .tooLarge: return Self.reply(431, "request head too large\n")
    case .malformed: return Self.reply(400, "bad request\n")
    case .head(let request, _):
      let path = request.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
      guard request.method == "GET" || request.method == "HEAD", path == "/metrics" else {
        return Self.reply(404, "not found; try GET /metrics\n")
      }
      let format = MetricsFormat.negotiate(accept: request.accept)
      return Self.reply(200, board.text(format), type: format.contentType, head: request.method == "HEAD")
    }
  }

  private static func reply(
    _ status: Int, _ body: String, type: String = "text/plain; charset=utf-8", head: Bool = false
  ) -> [UInt8] {
    let reasons = [200: "OK", 404: "Not Found", 408: "Request Timeout", 431: "Request Header Fields Too Large"]
    let bytes = Array(body.utf8)
    var out = Array(
      ("HTTP/1.1 \(status) \(reasons[status] ?? "Bad Request")\r\nContent-Type: \(type)\r\n"
        + "Content-Length: \(bytes.count)\r\nConnection: close\r\n\r\n").utf8)
    if !head { out += bytes }
    return out
  }
}
