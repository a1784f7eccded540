import OutboxSupport

/// One client connection of the fake: the bytes read and not yet parsed, the answer waiting for its
/// time (one at a time: a connection's answers leave in order), and the bytes not yet written.
final class FakeConnection {
  struct Pending {
    var due: Double
    var bytes: [UInt8]
    var drop: Bool
    var close: Bool
  }

  let fd: Int32
  let id: Int
  let maxBody: Int
  var input: [UInt8] = []
  var output: [UInt8] = []
  var written = 0
  var pending: Pending?
  var continueSent = false
  var peerClosed = false
  var closeAfterWrite = false
  var finished = false

  init(fd: Int32, id: Int, maxBody: Int) {
    self.fd = fd
    self.id = id
    self.maxBody = maxBody
  }

  var wantsRead: Bool {
    !peerClosed && !closeAfterWrite && input.count <= FakeHTTP.maxHeadBytes + maxBody
      && output.count - written < 1 << 20
  }
  var wantsWrite: Bool { written < output.count }
  /// Bytes of a next request are already here (pipelining): the loop must not sleep.
  var hasBufferedInput: Bool { pending == nil && !input.isEmpty && !closeAfterWrite }

  func readAvailable() {
    var chunk = [UInt8](repeating: 0, count: 65_536)
    for _ in 0..<16 {
      let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if n > 0 {
        input.append(contentsOf: chunk[0..<n])
        if n < chunk.count || input.count > FakeHTTP.maxHeadBytes + maxBody { return }
        continue
      }
      if n == 0 {
        peerClosed = true
        if pending != nil { finished = true }  // the client went away before its answer
        return
      }
      if errno == EINTR { continue }
      if errno != EAGAIN && errno != EWOULDBLOCK { peerClosed = true }
      return
    }
  }

  /// Parses and answers the requests that arrived, up to the first whose answer must wait.
  func handle(_ state: FakeBrazeState, nowMs: Int64, monotonic: Double) {
    while pending == nil && !closeAfterWrite && !input.isEmpty {
      switch FakeHTTP.parse(input, maxBody: maxBody) {
      case .incomplete(let expectsContinue):
        if expectsContinue && !continueSent {
          output += Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
          continueSent = true
        }
        if peerClosed { input = [] }
        return
      case .bad(let status, let message):
        let answer = FakeAnswer.message(status, message)
        output += FakeHTTP.render(status: status, headers: [], body: answer.body, keepAlive: false)
        state.byStatus[status, default: 0] += 1
        input = []
        closeAfterWrite = true
        return
      case .request(let request, let consumed):
        input.removeFirst(consumed)
        continueSent = false
        let answer = state.route(request, connection: id, nowMs: nowMs, monotonic: monotonic)
        let bytes = FakeHTTP.render(
          status: answer.status, headers: answer.headers, body: answer.body, keepAlive: request.keepAlive,
          type: answer.type)
        if !request.path.hasPrefix("/_fake/") { state.inFlight += 1 }
        pending = Pending(
          due: monotonic + Double(answer.delayMs) / 1000, bytes: bytes, drop: answer.drop,
          close: !request.keepAlive)
        if request.path.hasPrefix("/_fake/") { release(state, monotonic: monotonic, counted: false) }
      }
    }
  }

  /// Moves a due answer to the output (or drops the connection, as scripted).
  func release(_ state: FakeBrazeState, monotonic: Double, counted: Bool = true) {
    guard let p = pending, p.due <= monotonic else { return }
    pending = nil
    if counted { state.inFlight -= 1 }
    if p.drop {
      finished = true
      return
    }
    output += p.bytes
    if p.close { closeAfterWrite = true }
  }

  func write() {
    while written < output.count {
      let n = output.withUnsafeBytes { socketSend(fd, $0.baseAddress! + written, $0.count - written) }
      if n > 0 {
        written += n
        continue
      }
      if n < 0 && errno == EINTR { continue }
      if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
      finished = true
      return
    }
    if written == output.count {
      output.removeAll(keepingCapacity: output.count < 1 << 16)
      written = 0
      if closeAfterWrite || (peerClosed && pending == nil && input.isEmpty) { finished = true }
    }
  }
}
