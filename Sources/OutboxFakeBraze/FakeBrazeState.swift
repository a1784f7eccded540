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
  var script: [FaultStep]
  var rateLimit: FakeRateLimit?
  var delayMs: Int
  private var windowStart = 0.0
  private var windowCount = 0
  /// The log `GET /_fake/requests` serves: the newest `settings.keep` records, as JSON.
  var log: [[UInt8]] = []
  var logStart = 0
  var logBytes = 0
  static let maxLogBytes = 256 << 20
  var seq = 0
  var recordFD: Int32 = -1
  var pendingRecord: [UInt8] = []
  // Counters for GET /_fake/stats.
  var byStatus: [Int: Int] = [:]
  var dropped = 0
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
