import OutboxSupport

/// One client of the metrics listener, from its accept to its close; its socket is non-blocking and
/// the listener's thread polls it among the others (`MetricsListener.serve`).
///
/// It reads until its request head is complete (at most `maxHeadBytes`, within `headSeconds` of the
/// accept), writes one answer with `Connection: close`, shuts its sending side and then discards
/// what the client still sends (a pipelined request, a body) until the client closes or
/// `lingerSeconds` pass: closing with unread bytes would reset the connection and could lose the
/// answer on its way.
struct MetricsConnection {
  static let maxHeadBytes = 8192
  static let headSeconds = 2.0
  static let writeSeconds = 2.0
  static let lingerSeconds = 1.0

  enum Phase { case reading, writing, lingering, closed }

  let fd: Int32
  let opened: Double
  private(set) var phase = Phase.reading
  private(set) var deadline: Double
  private var received: [UInt8] = []
  private var reply: [UInt8] = []
  private var sent = 0

  init(fd: Int32, now: Double) {
    self.fd = fd
    self.opened = now
    self.deadline = now + Self.headSeconds
  }

  /// The poll events it waits for.
  var events: Int16 { Int16(phase == .writing ? POLLOUT : POLLIN) }

  /// One turn after its poll: reads, answers through `answer` once the head is in, writes, lingers;
  /// or gives up at its deadline. Closes the socket when done.
  mutating func step(now: Double, answer: (HTTPRequestHead.Parse) -> [UInt8]) {
    switch phase {
    case .reading: read(now: now, answer: answer)
    case .writing: write(now: now)
    case .lingering: linger(now: now)
    case .closed: return
    }
  }

  /// Closes it at once (also when the listener is full and this is its oldest connection).
  mutating func drop() {
    guard phase != .closed else { return }
    phase = .closed
    close(fd)
  }

  private mutating func read(now: Double, answer: (HTTPRequestHead.Parse) -> [UInt8]) {
    // Timed out: answered as still incomplete (408).
    guard now < deadline else { return respond(answer(.incomplete), now: now) }
    var chunk = [UInt8](repeating: 0, count: Self.maxHeadBytes + 1 - received.count)
    let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
    if n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) { return }
    guard n > 0 else { return drop() }
    received += chunk[0..<n]
    let parsed = HTTPRequestHead.parse(received, limit: Self.maxHeadBytes)
    if parsed != .incomplete { respond(answer(parsed), now: now) }
  }

  private mutating func respond(_ bytes: [UInt8], now: Double) {
    received = []
    reply = bytes
    phase = .writing
    deadline = now + Self.writeSeconds
    write(now: now)
  }

  private mutating func write(now: Double) {
    guard now < deadline else { return drop() }
    let n = reply.withUnsafeBytes { socketSend(fd, $0.baseAddress! + sent, $0.count - sent) }
    if n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) { return }
    guard n > 0 else { return drop() }
    sent += n
    guard sent == reply.count else { return }
    reply = []
    shutdown(fd, Int32(SHUT_WR))
    phase = .lingering
    deadline = now + Self.lingerSeconds
  }

  private mutating func linger(now: Double) {
    guard now < deadline else { return drop() }
    var scratch = [UInt8](repeating: 0, count: 4096)
    let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
    if n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) { return }
    if n <= 0 { drop() }
  }
}
