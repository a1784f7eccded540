import OutboxJSON
import OutboxSupport

/// One answer the fake gives: sent after `delayMs`, or the connection dropped instead.
struct FakeAnswer {
  var status: Int
  var headers: [(String, String)] = []
  var body: [UInt8]
  var delayMs = 0
  var drop = false
  var type = "application/json"

  init(_ status: Int, _ body: JSONValue, headers: [(String, String)] = []) {
    self.status = status
    self.body = body.jsonBytes
    self.headers = headers
  }

  static func message(_ status: Int, _ text: String, errors: [JSONValue] = []) -> FakeAnswer {
    var members = [JSONMember("message", .string(text))]
    if !errors.isEmpty { members.append(JSONMember("errors", .array(errors))) }
    return FakeAnswer(status, .object(members))
  }
}

/// Everything the fake knows, touched only by its one thread: the script, the rate window, the
/// request log, the counters. `route` answers one request.
final class FakeBrazeState {
  let settings: FakeBrazeSettings
  private var script: [FaultStep]
  private var rateLimit: FakeRateLimit?
  var delayMs: Int
  private var windowStart = 0.0
  private var windowCount = 0
  /// The log `GET /_fake/requests` serves: the newest `settings.keep` records, as JSON.
  private var log: [[UInt8]] = []
  private var logStart = 0
  private var logBytes = 0
  static let maxLogBytes = 256 << 20
  private var seq = 0
  private var recordFD: Int32 = -1
  private var pendingRecord: [UInt8] = []
  // Counters for GET /_fake/stats.
  var byStatus: [Int: Int] = [:]
  private var dropped = 0
  var inFlight = 0
  var maxInFlight = 0
  var connections = 0
  var maxConnections = 0

  init(_ settings: FakeBrazeSettings) throws(ScriptError) {
    self.settings = settings
    script = settings.steps
    rateLimit = settings.rateLimit
    delayMs = settings.delayMs
    if let path = settings.recordPath {
      recordFD = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o644)
      guard recordFD >= 0 else { throw ScriptError("--record: cannot open \(path): \(errnoText(errno))") }
    }
  }

  /// Answers one request that arrived at `nowMs` (wall clock) on connection `connection`.
  func route(_ request: FakeRequest, connection: Int, nowMs: Int64, monotonic: Double) -> FakeAnswer {
    if request.path.hasPrefix("/_fake/") { return control(request) }
    var answer: FakeAnswer
    if request.path == "/users/track" && request.method == "POST" {
      answer = track(request, monotonic: monotonic)
    } else if request.path == "/users/track" {
      answer = .message(405, "/users/track takes POST")
      answer.headers.append(("Allow", "POST"))
    } else {
      answer = .message(404, "no such endpoint: \(request.path); this fake serves POST /users/track")
    }
    record(request, answer, connection: connection, nowMs: nowMs)
    return answer
  }

  private func track(_ request: FakeRequest, monotonic: Double) -> FakeAnswer {
    let step = nextStep()
    var answer = checked(request, monotonic: monotonic, scripted: step)
    if let step {
      for (name, value) in step.headers.sorted(by: { $0.key < $1.key }) { answer.headers.append((name, value)) }
      if let seconds = settings.retryAfter, step.headers["Retry-After"] == nil,
        answer.status == 429 || answer.status >= 500
      {
        answer.headers.append(("Retry-After", String(seconds)))
      }
      answer.drop = step.drop
      answer.delayMs = step.delayMs
    }
    answer.delayMs += delayMs
    return answer
  }

  /// The answer before delays and drops: a scripted status, else the real checks.
  private func checked(_ request: FakeRequest, monotonic: Double, scripted: FaultStep?) -> FakeAnswer {
    if let scripted, let status = scripted.status {
      if let body = scripted.body { return FakeAnswer(status, body) }
      return .message(status, Self.defaultMessage(status))
    }
    if let body = scripted?.body { return FakeAnswer(201, body) }
    guard let auth = request.header("authorization"), auth.hasPrefix("Bearer "), auth.count > 7,
      settings.apiKey.map({ "Bearer " + $0 == auth }) ?? true
    else { return .message(401, "Invalid API key") }
    if let limited = rateLimited(monotonic) { return limited }
    let body: JSONValue
    do { body = try JSONReader.parse(request.body) } catch {
      return .message(400, "Invalid JSON in request body at byte \(error.offset): \(error.reason)")
    }
    switch FakeBrazeRules.check(body, maxObjects: settings.maxObjects, combined: settings.combined) {
    case .fatal(let message):
      return rateHeaders(.message(400, message))
    case .checked(var errors, let processed):
      errors += scripted?.errors ?? []
      var members = [JSONMember("message", .string("success"))]
      for array in FakeBrazeRules.arrays {
        if let n = processed[array] { members.append(JSONMember("\(array)_processed", .int(Int64(n)))) }
      }
      if !errors.isEmpty {
        members.append(
          JSONMember(
            "errors",
            .array(
              errors.map {
                .object([
                  JSONMember("type", .string($0.message)), JSONMember("input_array", .string($0.array)),
                  JSONMember("index", .int(Int64($0.index))),
                ])
              })))
      }
      return rateHeaders(FakeAnswer(201, .object(members)))
    }
  }

  private func nextStep() -> FaultStep? {
    guard !script.isEmpty else { return nil }
    let step = script[0]
    if step.times > 1 { script[0].times -= 1 } else { script.removeFirst() }
    return step
  }

  /// A new rate limit counts from its first request.
  func restartRateWindow() {
    windowStart = 0
    windowCount = 0
  }

  /// 429 (with `Retry-After`) when this request is over `N/S` in the current window.
  private func rateLimited(_ now: Double) -> FakeAnswer? {
    guard let limit = rateLimit else { return nil }
    if now - windowStart >= limit.seconds {
      windowStart = now
      windowCount = 0
    }
    windowCount += 1
    guard windowCount > limit.count else { return nil }
    var answer = rateHeaders(.message(429, "API rate limit reached"))
    answer.headers.append(("Retry-After", String(Int(max(0, windowStart + limit.seconds - now).rounded(.up)))))
    return answer
  }

  /// `X-RateLimit-*` on every answer while a rate limit is set, as Braze sends them.
  private func rateHeaders(_ answer: FakeAnswer) -> FakeAnswer {
    guard let limit = rateLimit else { return answer }
    var answer = answer
    let remaining = max(0, limit.count - windowCount)
    let resetMs = Clock.system.now() + Int64(max(0, windowStart + limit.seconds - Clock.monotonicSeconds()) * 1000)
    answer.headers += [
      ("X-RateLimit-Limit", String(limit.count)), ("X-RateLimit-Remaining", String(remaining)),
      ("X-RateLimit-Reset", String((resetMs + 999) / 1000)),
    ]
    return answer
  }

  static func defaultMessage(_ status: Int) -> String {
    switch status {
    case 200..<300: "success"
    case 400: "Bad Request"
    case 401: "Invalid API key"
    case 403: "Access Denied"
    case 404: "Not Found"
    case 429: "API rate limit reached"
    default: status >= 500 ? "Internal Server Error" : FakeHTTP.reason(status)
    }
  }
}

// MARK: - Log

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

  private var stats: JSONValue {
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
