import OutboxJSON
import OutboxSupport

/// The request log (`--record FILE`, `GET /_fake/requests`) and the control endpoints under `/_fake/`.
extension FakeBrazeState {
  /// One record: `{"seq","at","method","path","headers","body"|"bodyText","status","answer","delayMs","dropped","connection"}`.
  func record(_ request: FakeRequest, _ answer: FakeAnswer, connection: Int, nowMs: Int64) {
    seq += 1
    byStatus[answer.status, default: 0] += answer.drop ? 0 : 1
    if answer.drop { dropped += 1 }
    var headers: [JSONMember] = []
    for (name, value) in request.headers {
      headers.append(JSONMember(name, .string(name == "authorization" ? Self.masked(value) : value)))
    }
    var members = [
      JSONMember("seq", .int(Int64(seq))), JSONMember("at", .string(UTCTime.format(ms: nowMs))),
      JSONMember("method", .string(request.method)), JSONMember("path", .string(request.path)),
      JSONMember("headers", .object(headers)),
    ]
    if let body = try? JSONReader.parse(request.body) {
      members.append(JSONMember("body", body))
    } else {
      members.append(JSONMember("bodyText", .string(String(decoding: request.body.prefix(65_536), as: UTF8.self))))
    }
    members.append(JSONMember("status", answer.drop ? .null : .int(Int64(answer.status))))
    let answerBody = (try? JSONReader.parse(answer.body)) ?? .null
    members.append(JSONMember("answer", answer.drop ? .null : answerBody))
    members += [
      JSONMember("delayMs", .int(Int64(answer.delayMs))), JSONMember("dropped", .bool(answer.drop)),
      JSONMember("connection", .int(Int64(connection))),
    ]
    let line = JSONValue.object(members).jsonBytes
    if recordFD >= 0 {
      pendingRecord += line
      pendingRecord.append(10)
    }
    remember(line)
  }

  /// The key is never written: `Bearer ***` plus its last four characters when it is long enough to keep some secret.
  static func masked(_ value: String) -> String {
    guard value.hasPrefix("Bearer ") else { return "***" }
    let key = value.dropFirst(7)
    return key.count >= 16 ? "Bearer ***" + key.suffix(4) : "Bearer ***"
  }

  private func remember(_ line: [UInt8]) {
    log.append(line)
    logBytes += line.count
    while log.count - logStart > settings.keep || logBytes > Self.maxLogBytes {
      logBytes -= log[logStart].count
      log[logStart] = []
      logStart += 1
    }
    if logStart > 4096 && logStart * 2 > log.count {
      log.removeFirst(logStart)
      logStart = 0
    }
  }

  /// Writes the records the last turn made to `--record FILE` (once per turn, not per request).
  func flushRecords() {
    guard recordFD >= 0, !pendingRecord.isEmpty else { return }
    var offset = 0
    while offset < pendingRecord.count {
      let n = pendingRecord.withUnsafeBytes { posixWrite(recordFD, $0.baseAddress! + offset, $0.count - offset) }
      if n < 0 && errno == EINTR { continue }
      guard n > 0 else {
        Log.stderr("push-outbox fake-braze: --record: write failed: \(errnoText(errno)); recording stops")
        closeFD(recordFD)
        recordFD = -1
        break
      }
      offset += n
    }
    pendingRecord.removeAll(keepingCapacity: pendingRecord.count < 1 << 20)
  }

  /// `GET /_fake/requests[?since=SEQ]`, `DELETE /_fake/requests`, `POST /_fake/script`,
  /// `GET /_fake/stats`, `POST /_fake/reset`, `GET /_fake/health`.
  func control(_ request: FakeRequest) -> FakeAnswer {
    switch (request.method, request.path) {
    case ("GET", "/_fake/requests"):
      let since = request.parameter("since").flatMap(Int.init) ?? 0
      var body: [UInt8] = [UInt8(ascii: "[")]
      let first = max(logStart, log.count - (seq - since))
      for i in max(first, logStart)..<log.count {
        if body.count > 1 { body.append(UInt8(ascii: ",")) }
        body += log[i]
      }
      body.append(UInt8(ascii: "]"))
      var answer = FakeAnswer(200, .null)
      answer.body = body
      return answer
    case ("DELETE", "/_fake/requests"):
      forget()
      return FakeAnswer(200, .object([JSONMember("ok", .bool(true))]))
    case ("POST", "/_fake/reset"):
      forget()
      script = []
      rateLimit = nil
      restartRateWindow()
      delayMs = 0
      (byStatus, dropped, maxInFlight, maxConnections) = ([:], 0, inFlight, connections)
      return FakeAnswer(200, .object([JSONMember("ok", .bool(true))]))
    case ("POST", "/_fake/script"):
      let change: ScriptChange
      do {
        switch ScriptChange.parse(try JSONReader.parse(request.body)) {
        case .success(let c): change = c
        case .failure(let e): return .message(400, e.message)
        }
      } catch { return .message(400, "the script is not JSON: \(error)") }
      if let steps = change.steps { script = change.append ? script + steps : steps }
      if let limit = change.rateLimit {
        rateLimit = limit
        restartRateWindow()
      }
      if let ms = change.delayMs { delayMs = ms }
      return FakeAnswer(200, .object([JSONMember("ok", .bool(true)), JSONMember("queued", .int(Int64(queued)))]))
    case ("GET", "/_fake/stats"):
      return FakeAnswer(200, stats)
    case ("GET", "/_fake/health"):
      return FakeAnswer(200, .object([JSONMember("ok", .bool(true))]))
    default:
      return .message(
        404,
        "no such control endpoint: \(request.method) \(request.path); see GET /_fake/requests, GET /_fake/stats, "
          + "POST /_fake/script, POST /_fake/reset")
    }
  }

  private var queued: Int { script.reduce(0) { $0 + $1.times } }

  private func forget() {
    log = []
    logStart = 0
    logBytes = 0
  }

  var stats: JSONValue {
    let statuses = byStatus.keys.sorted().map { JSONMember(String($0), .int(Int64(byStatus[$0]!))) }
    return .object([
      JSONMember("requests", .int(Int64(seq))), JSONMember("byStatus", .object(statuses)),
      JSONMember("dropped", .int(Int64(dropped))), JSONMember("inFlight", .int(Int64(inFlight))),
      JSONMember("maxInFlight", .int(Int64(maxInFlight))), JSONMember("connections", .int(Int64(connections))),
      JSONMember("maxConnections", .int(Int64(maxConnections))), JSONMember("scriptLeft", .int(Int64(queued))),
      JSONMember("rateLimit", rateLimit.map { .string($0.text) } ?? .null),
      JSONMember("delayMs", .int(Int64(delayMs))),
    ])
  }
}
