import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxServer
import OutboxStore
import OutboxSupport
import OutboxTransport

/// The rounds of one `push-outbox flush`: pick, write the lines, then remove (see `FlushCommand`).
struct FlushSession {
  let options: FlushCommand.Options
  var caller: InProcessCaller
  private let transport: StdioTransport
  private(set) var lines = 0
  private(set) var objects = 0
  private(set) var skipped = 0
  private(set) var remaining = 0
  private(set) var kept: (flushId: String, expires: String)?
  private var problem: String?

  init(options: FlushCommand.Options, caller: InProcessCaller, wakeup: Int32 = -1) {
    self.options = options
    self.caller = caller
    transport = StdioTransport(wakeup: wakeup)
  }

  /// One line for stderr: what was written and what is left in the store, counted there at the end
  /// (items in a live lease and dead letters are held but not pending, and each is named).
  var summary: String {
    var text = "\(lines) lines, \(objects) \(options.usersTrack ? "objects" : "items")"
    if skipped > 0 { text += ", \(skipped) without an identifier moved to the dead letters (no_identifier)" }
    let store = caller.server.service.store
    let leased = store.items.leasedCount
    text += "; left in the store: \(store.count - leased) still pending, \(leased) leased"
    text += ", \(store.items.deadCount) dead letters"
    if let kept { text += "; leased as flushId \(kept.flushId) until \(kept.expires): ack it with push-outbox ack" }
    return problem.map { text + "; stopped: " + $0 } ?? text
  }

  /// Runs rounds until nothing is left, `--max` is reached, or a round fails. Returns the exit code.
  mutating func run() -> ExitCode {
    var left = options.max ?? (options.leaseMs == nil ? Int.max : FlushCommand.roundSize)
    var defaultUser: JSONValue?
    if let text = options.defaultUser {
      guard let user = try? JSONReader.parse(text, maxDepth: 16) else {
        problem = "--default-user is not JSON"
        return .usage
      }
      defaultUser = user
    }
    if let leaseMs = options.leaseMs { return leaseRound(max: left, leaseMs: leaseMs, defaultUser: defaultUser) }
    var issues = Issues()
    let user = defaultUser.flatMap { UserIdentifier.parse($0, path: "--default-user", issues: &issues) }
    guard issues.isEmpty else {
      problem = issues.errors.map { "\($0.path): \($0.message)" }.joined(separator: "; ")
      return .usage
    }
    let shape = Shape(usersTrack: options.usersTrack, defaultUser: user)
    while left > 0 {
      guard !StopRequest.isRequested else { return stopBySignal() }
      let outcome = plainRound(max: min(left, FlushCommand.roundSize), shape)
      if case .dropped = outcome { continue }  // only malformed bodies were picked: they are gone now
      guard case .wrote(let items) = outcome else {
        if case .stop(let code) = outcome { return code }
        return .failure
      }
      left -= items
      if items == 0 || remaining == 0 { break }
    }
    return .success
  }

  /// Writes up to `max` items' lines, then removes exactly those items (durably). A failed write
  /// removes nothing; a kill between the write and the removal writes them again next time.
  private mutating func plainRound(max: Int, _ shape: Shape) -> Outcome {
    let service = caller.server.service
    service.expireLeases()  // items whose lease ran out while nothing ran are pending again
    let result = FlushPending.peek(max: max, shape, service)
    remaining = result.remaining
    skipped += result.skipped.count
    guard !result.seqs.isEmpty else {
      if let error = service.store.commit() { return stop("cannot record the dead letters: \(error)") }
      return result.dropped > 0 ? .dropped : .wrote(0)
    }
    var out: [UInt8] = []
    let count = result.lines(into: &out)
    guard transport.write(out) else { return stop(Self.why + "; the items of this round stay pending") }
    service.store.drain(result.seqs, flushId: result.flushId)
    if let error = service.store.commit() { return stop("cannot record the removal: \(error)") }
    lines += count
    objects += shape.usersTrack ? result.objectCount : count
    return .wrote(result.seqs.count)
  }

  private mutating func stopBySignal() -> ExitCode {
    problem = "stopped by a signal; what is left stays pending"
    return .failure
  }

  private mutating func stop(_ reason: String) -> Outcome {
    problem = reason
    return .stop(.failure)
  }

  enum Outcome {
    /// Items written and removed.
    case wrote(Int)
    /// Nothing written: every item picked had a malformed body (dropped by the round's commit).
    case dropped
    /// The exit code to stop with.
    case stop(ExitCode)
  }

  /// `--lease`: one `flushPending` lease through the wire method, written and kept for a later ack.
  /// A flush lease that is already live is handed out again (the method's repeat rule).
  private mutating func leaseRound(max: Int, leaseMs: Int, defaultUser: JSONValue?) -> ExitCode {
    var params = [
      JSONMember("format", .string(options.format)), JSONMember("max", .int(Int64(max))),
      JSONMember("leaseMs", .int(Int64(leaseMs))),
    ]
    if let defaultUser { params.append(JSONMember("defaultUser", defaultUser)) }
    let answer = caller.call(FlushPending.name, params)
    guard case .success(let result) = answer else { return fail(answer) }
    let flushId = result["flushId"]?.stringValue ?? ""
    let values = result["requests"]?.arrayValue ?? result["items"]?.arrayValue ?? []
    remaining = Int(result["remaining"]?.intValue ?? 0)
    skipped += result["skipped"]?.arrayValue?.count ?? 0
    guard !values.isEmpty else { return .success }
    var out: [UInt8] = []
    for value in values {
      value.encodeJSON(into: &out)
      out.append(UInt8(ascii: "\n"))
    }
    guard transport.write(out) else {
      _ = caller.call(ReleaseFlush.name, [JSONMember("flushId", .string(flushId))])
      problem = Self.why + "; the lease was released and its items stay pending"
      return .failure
    }
    lines += values.count
    objects += result["requests"] == nil ? values.count : values.reduce(0) { $0 + Self.objectCount($1) }
    kept = (flushId, result["leaseExpiresAt"]?.stringValue ?? "?")
    return .success
  }

  /// Why a write stopped: a signal, or the reader went away.
  private static var why: String { StopRequest.isRequested ? "stopped by a signal" : "stdout closed" }

  private static func objectCount(_ body: JSONValue) -> Int {
    (body["attributes"]?.arrayValue?.count ?? 0) + (body["events"]?.arrayValue?.count ?? 0)
  }

  private mutating func fail(_ answer: Result<JSONValue, InProcessCaller.Failure>) -> ExitCode {
    guard case .failure(let failure) = answer else { return .failure }
    problem = failure.text
    return failure.code == ErrorCode.invalidParams.rawValue ? .usage : .failure
  }
}
