// TEMPORARY: lets the lead compile while the domain rules are written. Deleted before commit.
package enum UserIdentifier: Sendable, Hashable {
  case externalId(String)
  package static func parse(_ value: JSONValue, path: String, issues: inout Issues) -> UserIdentifier? {
    value["externalId"]?.stringValue.map { .externalId($0) }
  }
  package var json: JSONValue { if case .externalId(let s) = self { return .object([JSONMember("externalId", .string(s))]) }; return .null }
  package var trackMembers: [JSONMember] { if case .externalId(let s) = self { return [JSONMember("external_id", .string(s))] }; return [] }
  package var key: String { "\(self)" }
}
package enum CustomEventRules {
  package static func check(name: String, properties: [JSONMember], limits: DomainLimits, issues: inout Issues) -> [JSONMember] { properties }
  package static func checkTime(_ time: String, issues: inout Issues) -> Int64? { ISO8601.parseDateTime(time) }
}
package enum AttributeOp: String, Sendable, CaseIterable { case set, inc, add, remove, unset }
package enum CustomAttributeRules {
  package static func check(key: String, op: AttributeOp, value: JSONValue, limits: DomainLimits, issues: inout Issues) -> JSONValue { value }
}
package enum UserField: String, Sendable, CaseIterable { case email, first_name, last_name, phone, gender, dob, country, home_city, language, time_zone, email_subscribe, push_subscribe }
package enum UserFieldRules {
  package static func check(field: String, value: JSONValue, limits: DomainLimits, issues: inout Issues) -> (field: UserField, value: JSONValue)? {
    UserField(rawValue: field).map { ($0, value) }
  }
}
package enum PushPayload {
  package static func parse(payload: JSONValue, require: JSONValue?, categories: JSONValue?, issues: inout Issues) -> JSONValue { .object([]) }
}
