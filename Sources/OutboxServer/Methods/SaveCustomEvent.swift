import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxStore
import OutboxSupport

/// `saveCustomEvent {name, properties?, time?, user?, id?}` → `{id, seq, pending}`.
///
/// Validates the event to Braze's rules (`CustomEventRules`), stamps the capture time, and stores it.
/// `time` defaults to the capture time, so a flush never re-stamps it. The item is written once,
/// straight from the request's tape: canonical `properties` text is copied as sent.
/// Transcript: `Protocol/transcripts/basic.txt`.
enum SaveCustomEvent: RPCMethod {
  package static let name = "saveCustomEvent"

  package static func handle(_ params: inout Params, _ service: Service) throws -> SaveResult {
    try service.save(prepare(&params, service))
  }

  /// Checks the params and builds the item, storing nothing (shared with `importLegacy`).
  package static func prepare(_ params: inout Params, _ service: Service) throws(RPCError) -> PreparedSave {
    let tape = params.tape
    let name = params.node("name", "string", required: true)
    let properties = params.node("properties", "object")
    let time = params.string("time").flatMap { CustomEventRules.checkTime($0, issues: &params.issues) }
    let user = params.userNode()
    let clientID = params.clientID()
    var body = Self.body(
      tape, name: name, properties: properties, user: user, limits: service.config.domain, issues: &params.issues)
    let warnings = try params.finish()
    body.appendTimeMember(ms: time ?? service.clock.now(), &service.timeText)
    return PreparedSave(
      kind: .customEvent, clientID: clientID, user: user?.user, attribute: nil, body: body, warnings: warnings)
  }

  /// The item's members up to `time`: `,"user":…,"name":…,"properties":…`, checked by the event rules
  /// on the way. Shared by `handle` and, as `appendBody`, the tape save (`TapeSave`).
  static func body(
    _ tape: JSONTape, name: Int?, properties: Int?, user: (user: UserIdentifier, node: Int)?, limits: DomainLimits,
    issues: inout Issues
  ) -> [UInt8] {
    var body: [UInt8] = []
    appendBody(tape, name: name, properties: properties, user: user, limits: limits, issues: &issues, to: &body)
    return body
  }

  /// `body(…)` appended to `body`, for a caller that reuses its buffer. Returns where the label
  /// (`,"name":…,"properties":`, `BodyParts`) ends in `body`.
  @discardableResult
  static func appendBody(
    _ tape: JSONTape, name: Int?, properties: Int?, user: (user: UserIdentifier, node: Int)?, limits: DomainLimits,
    issues: inout Issues, to body: inout [UInt8]
  ) -> Int {
    body.reserveCapacity(
      body.count + 96 + (properties.map { tape.text($0).count } ?? 0) + (name.map { tape.text($0).count } ?? 0))
    body.appendUser(user, from: tape)
    body.appendRaw(",\"name\":")
    if let name {
      CustomEventRules.checkName(tape, name, issues: &issues)
      tape.encode(name, into: &body)
    }
    body.appendRaw(",\"properties\":")
    let labelEnd = body.count
    if let properties {
      CustomEventRules.checkProperties(tape, properties, limits: limits, issues: &issues, into: &body)
    } else {
      body.appendASCII("{}")
    }
    return labelEnd
  }
}
