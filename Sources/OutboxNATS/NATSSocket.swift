import OutboxSupport

/// Why talking to the NATS server failed: the connection is dropped and the caller retries later.
package struct NATSError: Error, Sendable, CustomStringConvertible {
  package enum Kind: Sendable { case unreachable, timeout, closed, protocolError, refused, auth }
  package var kind: Kind
  package var description: String

  package init(_ kind: Kind, _ description: String) {
    self.kind = kind
    self.description = description
  }
}

/// One TCP connection in non-blocking mode: every wait is a `poll` with a deadline
/// (`Clock.monotonicSeconds()`), so a silent server never blocks a caller past its deadline.
final class NATSSocket {
  private(set) var fd: Int32 = -1

  /// Connects to the first address of `host` that answers before `deadline`.
  init(host: String, port: UInt16, deadline: Double) throws(NATSError) {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    #if canImport(Darwin)
    hints.ai_socktype = SOCK_STREAM
    #else
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    #endif
    var list: UnsafeMutablePointer<addrinfo>?
    let found = getaddrinfo(host, String(port), &hints, &list)
    guard found == 0, let first = list else {
      throw NATSError(.unreachable, "cannot resolve \(host): \(String(cString: gai_strerror(found)))")
    }
    defer { freeaddrinfo(list) }
    var problem = "no address"
    var entry: UnsafeMutablePointer<addrinfo>? = first
    while let info = entry {
      do throws(NATSError) {
        fd = try Self.open(info.pointee, deadline: deadline)
        return
      } catch { problem = error.description }
      entry = info.pointee.ai_next
    }
    throw NATSError(.unreachable, "cannot connect to \(host):\(port): \(problem)")
  }

  deinit { close() }

  func close() {
    closeFD(fd)
    fd = -1
  }

  private static func open(_ info: addrinfo, deadline: Double) throws(NATSError) -> Int32 {
    let fd = socket(info.ai_family, info.ai_socktype, info.ai_protocol)
    guard fd >= 0 else { throw NATSError(.unreachable, "socket: \(errnoText(errno))") }
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    var one: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    #if canImport(Darwin)
    setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
    #endif
    if connect(fd, info.ai_addr, info.ai_addrlen) != 0 {
      guard errno == EINPROGRESS else {
        let text = errnoText(errno)
        closeFD(fd)
        throw NATSError(.unreachable, text)
      }
      guard wait(fd, Int16(POLLOUT), deadline: deadline) else {
        closeFD(fd)
        throw NATSError(.timeout, "no answer to connect")
      }
      var code: Int32 = 0
      var length = socklen_t(MemoryLayout<Int32>.size)
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
      guard code == 0 else {
        closeFD(fd)
        throw NATSError(.unreachable, errnoText(code))
      }
    }
    return fd
  }

  /// Writes every byte before `deadline`.
  func send(_ bytes: [UInt8], deadline: Double) throws(NATSError) {
    var offset = 0
    while offset < bytes.count {
      let n = bytes.withUnsafeBytes { raw in socketSend(fd, raw.baseAddress! + offset, raw.count - offset) }
      if n > 0 {
        offset += n
      } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        guard Self.wait(fd, Int16(POLLOUT), deadline: deadline) else {
          throw NATSError(.timeout, "the server took no bytes before the deadline")
        }
      } else {
        throw NATSError(.closed, "write: \(errnoText(errno))")
      }
    }
  }

  /// The next bytes the server sent, waiting until `deadline`; nil when the deadline passed first.
  func receive(deadline: Double, into buffer: inout [UInt8]) throws(NATSError) -> Bool {
    guard Self.wait(fd, Int16(POLLIN), deadline: deadline) else { return false }
    buffer.removeAll(keepingCapacity: true)
    let capacity = 65_536
    let n = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { raw -> Int in
      let n = recv(fd, raw.baseAddress!, capacity, 0)
      if n > 0 { buffer.append(contentsOf: raw.prefix(n)) }
      return n
    }
    if n == 0 { throw NATSError(.closed, "the server closed the connection") }
    if n < 0 {
      if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return true }
      throw NATSError(.closed, "read: \(errnoText(errno))")
    }
    return true
  }

  /// Polls for `events` until `deadline`; false when it passed.
  private static func wait(_ fd: Int32, _ events: Int16, deadline: Double) -> Bool {
    while true {
      let left = deadline - Clock.monotonicSeconds()
      guard left > 0 else { return false }
      var entry = pollfd(fd: fd, events: events, revents: 0)
      let n = poll(&entry, 1, Int32(min(left * 1000, 60_000).rounded(.up)))
      if n > 0 { return true }
      if n < 0 && errno != EINTR { return true }  // the read or write reports the error
    }
  }
}
