import OutboxSupport

/// `push-outbox fake-braze`: a Braze `/users/track` stand-in on one thread with `poll`. Many
/// connections at once, HTTP/1.1 keep-alive and pipelining (a connection's requests are answered
/// in order), and delayed answers that hold only their own connection.
package final class FakeBrazeServer {
  package let port: UInt16
  private let listenFD: Int32
  private let state: FakeBrazeState
  private var connections: [Int32: FakeConnection] = [:]
  private var nextID = 0

  /// Binds and listens; the error is the one line to print.
  package init(_ settings: FakeBrazeSettings) throws(ScriptError) {
    state = try FakeBrazeState(settings)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = settings.port.bigEndian
    guard inet_pton(AF_INET, settings.host, &address.sin_addr) == 1 else {
      throw ScriptError("--listen: not a numeric IPv4 address: \(settings.host)")
    }
    #if canImport(Darwin)
    let fd = socket(AF_INET, SOCK_STREAM, 0)
    #else
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    #endif
    guard fd >= 0 else { throw ScriptError("socket: \(errnoText(errno))") }
    var one: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0, listen(fd, 1024) == 0 else {
      let text = errnoText(errno)
      close(fd)
      throw ScriptError("--listen: cannot listen on \(settings.host):\(settings.port): \(text)")
    }
    var actual = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &actual) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    listenFD = fd
    port = UInt16(bigEndian: actual.sin_port)
  }

  /// Serves until `wakeup` (the signal pipe) is readable, or stdin ends with `stopOnStdinEOF`.
  package func run(wakeup: Int32) {
    var fds: [pollfd] = []
    var order: [Int32] = []
    while !StopRequest.isRequested {
      fds.removeAll(keepingCapacity: true)
      order.removeAll(keepingCapacity: true)
      fds.append(pollfd(fd: wakeup, events: Int16(POLLIN), revents: 0))
      fds.append(pollfd(fd: state.settings.stopOnStdinEOF ? 0 : -1, events: Int16(POLLIN), revents: 0))
      let accepting = connections.count < state.settings.maxConnections
      fds.append(pollfd(fd: accepting ? listenFD : -1, events: Int16(POLLIN), revents: 0))
      var timeout = Int32(60_000)
      let now = Clock.monotonicSeconds()
      for (fd, c) in connections {
        var events: Int16 = 0
        if c.wantsRead { events |= Int16(POLLIN) }
        if c.wantsWrite { events |= Int16(POLLOUT) }
        if let due = c.pending?.due { timeout = min(timeout, Int32(max(0, (due - now) * 1000).rounded(.up))) }
        if c.hasBufferedInput { timeout = 0 }
        fds.append(pollfd(fd: fd, events: events, revents: 0))
        order.append(fd)
      }
      let ready = poll(&fds, nfds_t(fds.count), timeout)
      if ready < 0 && errno != EINTR { usleep(1000) }
      if fds[0].revents != 0 { break }
      if fds[1].revents != 0 && stdinEnded() { break }
      if fds[2].revents != 0 { acceptAll() }
      let nowMs = Clock.system.now()
      let monotonic = Clock.monotonicSeconds()
      for (n, fd) in order.enumerated() where fds[n + 3].revents != 0 {
        guard let c = connections[fd] else { continue }
        if fds[n + 3].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 { c.readAvailable() }
      }
      // Answer what arrived, then write: requests read in the same turn count as in flight together.
      for (_, c) in connections { c.handle(state, nowMs: nowMs, monotonic: monotonic) }
      state.maxInFlight = max(state.maxInFlight, state.inFlight)
      for (fd, c) in connections {
        c.release(state, monotonic: Clock.monotonicSeconds())
        c.write()
        if c.finished { drop(fd) }
      }
      state.flushRecords()
    }
    state.flushRecords()
  }

  private func stdinEnded() -> Bool {
    var byte = [UInt8](repeating: 0, count: 512)
    let n = read(0, &byte, byte.count)
    return n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)
  }

  private func acceptAll() {
    while connections.count < state.settings.maxConnections {
      var peer = sockaddr_in()
      var length = socklen_t(MemoryLayout<sockaddr_in>.size)
      let fd = withUnsafeMutablePointer(to: &peer) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listenFD, $0, &length) }
      }
      guard fd >= 0 else { return }
      _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
      _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
      var one: Int32 = 1
      setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
      #if canImport(Darwin)
      setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
      #endif
      nextID += 1
      connections[fd] = FakeConnection(
        fd: fd, id: Int(UInt16(bigEndian: peer.sin_port)), maxBody: state.settings.maxBodyBytes)
      state.connections = connections.count
      state.maxConnections = max(state.maxConnections, connections.count)
    }
  }

  private func drop(_ fd: Int32) {
    guard let c = connections.removeValue(forKey: fd) else { return }
    if c.pending != nil { state.inFlight -= 1 }
    close(fd)
    state.connections = connections.count
  }
}
