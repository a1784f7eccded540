import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxStore
import OutboxSupport

/// The fast path for the hot request: a single `saveCustomEvent` line with params `name`,
/// `properties` and `user` only, that passes every rule, is answered straight from its tape,
/// without `Envelope`, `Request`, `MethodTable`, `Params` or `SaveResult`.
///
/// It reads with the same reader and checks and writes the item with the same code as `handle`
/// (`SaveCustomEvent.body`, `CustomEventRules`, `UserIdentifier.locate`), makes the same calls in the
/// same order (clock, id, admit, seq, store, journal; the clock read once, for the body's `time` and
/// the item's saved time) and replies through the same reply path;
/// `FastSaveTests` compares the two, with a journal. Anything else, any issue (even a warning),
/// and a save the store would refuse go to the general path untouched (which reads the line again:
/// other methods pay a second read, the hot save pays none of the general path's dispatch).
extension Server {
  /// Answers `line` and returns true, or changes nothing and returns false.
  func handleFastSave(_ line: UnsafeBufferPointer<UInt8>) -> Bool {
    trimFastBody()
    let start = fastBody.count
    guard let save = FastSave.prepare(line, limits: fastLimits, scratch: fastTape, into: &fastBody) else {
      return false
    }
    return commitFastSave(save, body: &fastBody, from: start, now: service.clock.now())
  }

  /// The loop's part of a fast save prepared into `body[start...]` (its members, without `time`):
  /// the id, the store and the reply, with `now` for the body's `time` and the item's saved time.
  /// False, with nothing changed, when the store refuses it (before any change: the general path
  /// then answers, with the refusal).
  func commitFastSave(_ save: FastSave, body: inout [UInt8], from start: Int, now: Int64) -> Bool {
    body.appendTimeMember(ms: now, &service.timeText)
    let result = body.withUnsafeBytes { bytes in
      try? service.save(
        kind: .customEvent, clientID: nil, hasUser: save.hasUser,
        body: UnsafeRawBufferPointer(rebasing: bytes[start...]),
        warnings: [], now: now, parts: save.parts)
    }
    guard let result else { return false }
    reply(to: save.id, result)
    return true
  }

  /// The reused item buffer: each fast save appends its body after the last one's (emptying it for
  /// each cost some 100 instructions a save), and it is emptied once past 64 KiB; one grown well past
  /// that by a big item is let go.
  func trimFastBody() {
    if fastBody.count > 1 << 16 { fastBody.removeAll(keepingCapacity: fastBody.capacity <= 1 << 17) }
  }
}

/// A fast save read and checked, not yet stored: what `FastSave.prepare` found, with the item's
/// members (without `time`) appended to the caller's buffer. Preparing reads nothing but the line
/// and the configuration, so it may run on another thread (`LinePreparer`).
struct FastSave: Sendable {
  var id: RequestID
  var hasUser: Bool
  /// Where the body's user and label end (found as it is written, on the thread that writes it).
  var parts: BodyParts

  /// What preparing reads of the configuration: plain values, so passing them copies no references.
  struct Limits: Sendable {
    var maxDepth: Int
    var maxBatch: Int
    var domain: DomainLimits

    init(_ config: Configuration) {
      maxDepth = config.maxDepth
      maxBatch = config.maxBatch
      domain = config.domain
    }
  }

  /// Reads `line` as a fast save and appends its body to `body`; nil (with `body` in any state)
  /// when the line is anything else, has any issue, or names its user in another form than the
  /// stored one (the general path rewrites those). A line `DirectSave` takes is read in its one
  /// pass; the rest through a tape.
  static func prepare(
    _ line: UnsafeBufferPointer<UInt8>, limits: Limits, scratch: TapeScratch, into body: inout [UInt8]
  ) -> FastSave? {
    if let save = DirectSave.prepare(line, limits: limits, into: &body) { return save }
    return prepareFromTape(line, limits: limits, scratch: scratch, into: &body)
  }

  /// `prepare` through a tape: any line the fast path takes, in any layout.
  static func prepareFromTape(
    _ line: UnsafeBufferPointer<UInt8>, limits: Limits, scratch: TapeScratch, into body: inout [UInt8]
  ) -> FastSave? {
    defer { scratch.trim() }
    guard
      let tape = try? JSONTape.read(line, maxDepth: limits.maxDepth, maxBatch: limits.maxBatch, scratch: scratch),
      !tape.sawDuplicateKey, let parts = SaveCustomEvent.fastParts(tape), let id = RequestID(tape, parts.id)
    else { return nil }
    var issues = Issues()
    let start = body.count
    if let user = parts.user {
      guard UserIdentifier.locate(tape, user, path: "user", issues: &issues) != nil,
        UserIdentifier.isWireForm(tape, user)
      else { return nil }
      body.appendWireUser(user, from: tape)
    }
    let userEnd = body.count
    let labelEnd = SaveCustomEvent.appendBody(
      tape, name: parts.name, properties: parts.properties, user: nil, limits: limits.domain, issues: &issues,
      to: &body)
    guard issues.errors.isEmpty, issues.warnings.isEmpty else { return nil }
    let bodyParts = body.withUnsafeBytes {
      BodyParts(
        body: UnsafeRawBufferPointer(rebasing: $0[start...]), userEnd: userEnd - start, labelEnd: labelEnd - start)
    }
    return FastSave(id: id, hasUser: parts.user != nil, parts: bodyParts)
  }
}

extension SaveCustomEvent {
  /// The nodes of a request the fast path takes: one object with exactly `jsonrpc: "2.0"`, an `id`
  /// written as the reply writes it, `method` equal to `name`, and params with `name` and optional
  /// `properties` (an object) and `user`.
  static func fastParts(_ tape: JSONTape) -> (id: Int, name: Int, properties: Int?, user: Int?)? {
    guard tape.isObject(tape.root) else { return nil }
    var id: Int? = nil, version = false, method = false, params: Int? = nil
    for (k, v) in tape.members(tape.root) {
      if tape.stringEquals(k, "jsonrpc") {
        version = tape.isString(v) && tape.stringEquals(v, "2.0")
      } else if tape.stringEquals(k, "id") {
        id = v
      } else if tape.stringEquals(k, "method") {
        var wire = name  // a literal: its UTF-8 is at hand, with no lazy global behind it
        method = tape.isString(v) && wire.withUTF8 { tape.stringEquals(v, bytes: $0) }
      } else if tape.stringEquals(k, "params") {
        params = v
      } else {
        return nil
      }
    }
    let lead = id.map { tape.lead($0) } ?? 0
    let idIsNumber = lead == UInt8(ascii: "-") || lead &- 48 < 10
    guard version, method, let id, let params, tape.isObject(params), tape.isCanonical(id),
      tape.isString(id) || idIsNumber
    else { return nil }
    var nameNode: Int? = nil, properties: Int? = nil, user: Int? = nil
    for (k, v) in tape.members(params) {
      if tape.stringEquals(k, "name"), tape.isString(v) {
        nameNode = v
      } else if tape.stringEquals(k, "properties"), tape.isObject(v) {
        properties = v
      } else if tape.stringEquals(k, "user") {
        user = v
      } else {
        return nil
      }
    }
    guard let nameNode else { return nil }
    return (id, nameNode, properties, user)
  }

}
