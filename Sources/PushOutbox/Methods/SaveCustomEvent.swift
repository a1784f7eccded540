/// `saveCustomEvent {name, properties?, time?, user?, id?}` → `{id, seq, pending}`.
///
/// Validates the event to Braze's rules (`CustomEventRules`), stamps the capture time, and stores it.
/// `time` defaults to the capture time, so a flush never re-stamps it.
/// Transcript: `Protocol/transcripts/basic.txt`.
package enum SaveCustomEvent: RPCMethod {
  package static let name = "saveCustomEvent"

  package static func handle(_ params: inout Params, _ service: Service) throws -> SaveResult {
    let name = params.string("name", required: true)
    let properties = params.object("properties") ?? []
    let time = params.string("time").flatMap { CustomEventRules.checkTime($0, issues: &params.issues) }
    let user = params.user()
    let clientID = params.clientID()
    var checked = properties
    if let name {
      checked = CustomEventRules.check(
        name: name, properties: properties, limits: service.config.domain, issues: &params.issues)
    }
    let warnings = try params.finish()
    var body: [UInt8] = []
    body.reserveCapacity(64 + name!.utf8.count)
    body.appendUser(user)
    body.appendMember("name")
    body.appendJSONString(name!)
    body.appendMember("properties")
    checked.encodeJSONObject(into: &body)
    body.appendMember("time")
    body.append(UInt8(ascii: "\""))
    UTCTime.append(ms: time ?? service.clock.now(), to: &body)
    body.append(UInt8(ascii: "\""))
    return try service.save(
      kind: .customEvent, clientID: clientID, user: user, attribute: nil, body: body, warnings: warnings)
  }
}
