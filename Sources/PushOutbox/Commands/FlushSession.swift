/// The rounds of one `push-outbox flush`: lease, write the lines, ack (see `FlushCommand`).
struct FlushSession {
  let options: FlushCommand.Options
  var caller: InProcessCaller
  private let transport = StdioTransport(wakeup: -1)
  private(set) var lines = 0
  private(set) var objects = 0
  private(set) var skipped = 0
  private(set) var remaining = 0
  private(set) var kept: (flushId: String, expires: String)?
  private var problem: String?

  init(options: FlushCommand.Options, caller: InProcessCaller) {
    self.options = options
    self.caller = caller
  }

  /// One line for stderr: what was written and what is left.
  var summary: String {
    var text = "\(lines) lines, \(objects) \(options.format == "usersTrack" ? "objects" : "items")"
    if skipped > 0 { text += ", \(skipped) without an identifier moved to the dead letters (no_identifier)" }
    text += ", \(remaining) still pending"
    if let kept { text += "; leased as flushId \(kept.flushId) until \(kept.expires): ack it with ackFlush" }
    return problem.map { text + "; stopped: " + $0 } ?? text
  }

  /// Runs rounds until nothing is left, `--max` is reached, or a round fails. Returns the exit code.
  mutating func run() -> Int32 {
    var left = options.max ?? Int.max
    var params = [JSONMember("format", .string(options.format))]
    if let text = options.defaultUser {
      guard let user = try? JSONReader.parse(text, maxDepth: 16) else {
        problem = "--default-user is not JSON"
        return 2
      }
      params.append(JSONMember("defaultUser", user))
    }
    while left > 0 {
      let size = options.leaseMs == nil ? min(left, FlushCommand.roundSize) : min(left, Int(Int32.max))
      let outcome = round(params + [JSONMember("max", .int(Int64(size)))])
      guard case .wrote(let written) = outcome else {
        if case .stop(let code) = outcome { return code }
        return 1
      }
      left -= written
      if written == 0 || remaining == 0 || options.leaseMs != nil { break }
    }
    return 0
  }

  enum Outcome {
    /// Items (or `/users/track` objects) written and acked.
    case wrote(Int)
    /// The exit code to stop with.
    case stop(Int32)
  }

  /// One lease → write → ack.
  private mutating func round(_ params: [JSONMember]) -> Outcome {
    let leaseMs = options.leaseMs ?? FlushCommand.roundLeaseMs
    let answer = caller.call(FlushPending.name, params + [JSONMember("leaseMs", .int(Int64(leaseMs)))])
    guard case .success(let result) = answer else { return .stop(fail(answer)) }
    let flushId = result["flushId"]?.stringValue ?? ""
    let wanted = options.format == "usersTrack" ? "requests" : "items"
    guard let values = result[wanted]?.arrayValue else {  // a live lease of another shape, from a killed run
      _ = caller.call(ReleaseFlush.name, [JSONMember("flushId", .string(flushId))])
      return round(params)
    }
    remaining = Int(result["remaining"]?.intValue ?? 0)
    skipped += result["skipped"]?.arrayValue?.count ?? 0
    guard !values.isEmpty else { return .wrote(0) }
    var out: [UInt8] = []
    for value in values {
      value.encodeJSON(into: &out)
      out.append(UInt8(ascii: "\n"))
    }
    guard transport.write(out) else {
      _ = caller.call(ReleaseFlush.name, [JSONMember("flushId", .string(flushId))])
      problem = "stdout closed; the items of this round stay pending"
      return .stop(1)
    }
    let count = options.format == "usersTrack" ? values.reduce(0) { $0 + Self.objectCount($1) } : values.count
    lines += values.count
    objects += count
    if options.leaseMs != nil {
      kept = (flushId, result["leaseExpiresAt"]?.stringValue ?? "?")
      return .wrote(count)
    }
    let ack = caller.call(AckFlush.name, [JSONMember("flushId", .string(flushId))])
    guard case .success = ack else { return .stop(fail(ack)) }
    return .wrote(count)
  }

  private static func objectCount(_ body: JSONValue) -> Int {
    (body["attributes"]?.arrayValue?.count ?? 0) + (body["events"]?.arrayValue?.count ?? 0)
  }

  private mutating func fail(_ answer: Result<JSONValue, InProcessCaller.Failure>) -> Int32 {
    guard case .failure(let failure) = answer else { return 1 }
    problem = failure.text
    return failure.code == ErrorCode.invalidParams.rawValue ? 2 : 1
  }
}
