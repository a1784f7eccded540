import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxStore
import OutboxSupport

/// The tape save, the fast path's second tier: a `saveCustomEvent` line in any layout, read
/// through the JSON reader into a tape (`JSONTape`), that passes every rule with params `name` and
/// optional `properties` and `user`, checked and written by the general path's own code
/// (`SaveCustomEvent.appendBody`, `UserIdentifier.locate`). What the one-pass scan
/// (`OneScanSave`) does not take comes here; what this does not take goes to the general path.
enum TapeSave {
  /// Reads `line` through a tape and appends its body to `body`: any line the fast path takes, in
  /// any layout; nil (with `body` in any state) for anything else (`FastSave.prepare`).
  static func prepare(
    _ line: UnsafeBufferPointer<UInt8>, limits: FastSave.Limits, scratch: TapeScratch, into body: inout [UInt8]
  ) -> FastSave? {
    defer { scratch.trim() }
    guard
      let tape = try? JSONTape.read(line, maxDepth: limits.maxDepth, maxBatch: limits.maxBatch, scratch: scratch),
      !tape.sawDuplicateKey, let parts = parts(tape), let id = RequestID(tape, parts.id)
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

  /// The nodes of a request the fast path takes: one object with exactly `jsonrpc: "2.0"`, an `id`
  /// written as the reply writes it, `method` equal to `saveCustomEvent`, and params with `name` and
  /// optional `properties` (an object) and `user`.
  private static func parts(_ tape: JSONTape) -> (id: Int, name: Int, properties: Int?, user: Int?)? {
    guard tape.isObject(tape.root) else { return nil }
    var id: Int? = nil, version = false, method = false, params: Int? = nil
    for (k, v) in tape.members(tape.root) {
      if tape.stringEquals(k, "jsonrpc") {
        version = tape.isString(v) && tape.stringEquals(v, "2.0")
      } else if tape.stringEquals(k, "id") {
        id = v
      } else if tape.stringEquals(k, "method") {
        var wire = SaveCustomEvent.name  // a literal: its UTF-8 is at hand, with no lazy global behind it
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
