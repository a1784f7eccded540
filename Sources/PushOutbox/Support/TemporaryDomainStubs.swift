// TEMPORARY: lets the lead compile while the domain rules are written. Deleted before the final commit.
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
  package static func parse(payload: JSONValue, require: JSONValue?, categories: JSONValue?, issues: inout Issues) -> JSONValue {
    .object([JSONMember("extras", payload)])
  }
}
