import Testing

@testable import OutboxCommandLine
@testable import OutboxDelivery
@testable import OutboxDomain
@testable import OutboxJSON
@testable import OutboxJSONRPC
@testable import OutboxServer
@testable import OutboxStore
@testable import OutboxSupport
@testable import OutboxTransport

@Suite("UserFieldRules")
struct UserFieldRulesTests {
  typealias F = DomainFixture

  static func check(
    _ field: String, _ value: JSONValue, limits: DomainLimits = DomainLimits()
  )
    -> (result: (field: UserField, value: JSONValue)?, issues: Issues)
  {
    var issues = Issues()
    let result = UserFieldRules.check(field: field, value: value, limits: limits, issues: &issues)
    return (result, issues)
  }

  @Test(
    "valid values are stored normalized",
    arguments: [
      ("email", "a@b.co", JSONValue.string("a@b.co")),
      ("email", "first.last+tag@mail.example.org", .string("first.last+tag@mail.example.org")),
      ("first_name", "Zoë", .string("Zoë")), ("first_name", "", .string("")),
      ("last_name", F.repeated("é", 255), .string(F.repeated("é", 255))),
      ("home_city", "São Paulo", .string("São Paulo")),
      ("phone", "+15550109999", .string("+15550109999")), ("phone", "+1 (555) 010-9999", .string("+15550109999")),
      ("phone", "555.0109", .string("5550109")), ("phone", "+123456789012345", .string("+123456789012345")),
      ("gender", "M", .string("M")), ("gender", "f", .string("F")), ("gender", "O", .string("O")),
      ("gender", "n", .string("N")),
      ("gender", "P", .string("P")), ("gender", "u", .null), ("gender", "U", .null), ("gender", "unknown", .null),
      ("gender", "male", .string("M")), ("gender", "notApplicable", .string("N")),
      ("gender", "prefer_not_to_say", .string("P")),
      ("dob", "1980-12-21", .string("1980-12-21")), ("dob", "2000-02-29", .string("2000-02-29")),
      ("country", "US", .string("US")), ("country", "de", .string("DE")), ("country", "Gb", .string("GB")),
      ("country", "AX", .string("AX")),
      ("language", "en", .string("en")), ("language", "PT", .string("pt")), ("language", "zu", .string("zu")),
      ("time_zone", "America/New_York", .string("America/New_York")), ("time_zone", "UTC", .string("UTC")),
      ("time_zone", "Asia/Kolkata", .string("Asia/Kolkata")), ("time_zone", "Asia/Calcutta", .string("Asia/Calcutta")),
      ("time_zone", "US/Eastern", .string("US/Eastern")), ("time_zone", "Etc/GMT+5", .string("Etc/GMT+5")),
      ("time_zone", "europe/kyiv", .string("Europe/Kyiv")),
      ("time_zone", "America/Argentina/Buenos_Aires", .string("America/Argentina/Buenos_Aires")),
      ("email_subscribe", "opted_in", .string("opted_in")), ("email_subscribe", "optedIn", .string("opted_in")),
      ("email_subscribe", "opted-in", .string("opted_in")), ("push_subscribe", "OPTED_IN", .string("opted_in")),
      ("push_subscribe", "subscribed", .string("subscribed")),
      ("push_subscribe", "Unsubscribed", .string("unsubscribed")),
    ])
  func valid(field: String, value: String, stored: JSONValue) {
    let (result, issues) = Self.check(field, .string(value))
    #expect(issues.errors.isEmpty)
    #expect(result?.field.rawValue == field)
    #expect(result?.value == stored)
  }

  @Test(
    "invalid values name the rule",
    arguments: [
      ("email", "plain", "invalid_email"), ("email", "a@b", "invalid_email"), ("email", "@b.co", "invalid_email"),
      ("email", "a@b.", "invalid_email"), ("email", "a@.b", "invalid_email"), ("email", "a b@c.co", "invalid_email"),
      ("email", "a@b@c.co", "invalid_email"), ("email", "", "invalid_email"),
      ("email", F.repeated("a", 250) + "@b.com", "string_too_long"),
      ("first_name", F.repeated("x", 256), "string_too_long"), ("home_city", F.repeated("é", 256), "string_too_long"),
      ("phone", "12345", "invalid_phone"), ("phone", "+1234567890123456", "invalid_phone"),
      ("phone", "555-CALL-NOW", "invalid_phone"),
      ("phone", "1+5550109999", "invalid_phone"), ("phone", "", "invalid_phone"),
      ("gender", "nil", "invalid_gender"), ("gender", "x", "invalid_gender"), ("gender", "", "invalid_gender"),
      ("gender", "MF", "invalid_gender"),
      ("dob", "1980-02-30", "invalid_date"), ("dob", "12/21/1980", "invalid_date"),
      ("dob", "1980-12-21T00:00Z", "invalid_date"),
      ("country", "USA", "invalid_country"), ("country", "UK", "invalid_country"),
      ("country", "Australia", "invalid_country"), ("country", "", "invalid_country"),
      ("language", "eng", "invalid_language"), ("language", "en-US", "invalid_language"),
      ("language", "xx", "invalid_language"),
      ("time_zone", "EST5", "invalid_time_zone"), ("time_zone", "Mars/Olympus", "invalid_time_zone"),
      ("time_zone", "Factory", "invalid_time_zone"),
      ("time_zone", "+01:00", "invalid_time_zone"),
      ("email_subscribe", "yes", "invalid_subscription_state"),
      ("push_subscribe", "opted_out", "invalid_subscription_state"),
    ])
  func invalid(field: String, value: String, code: String) {
    let (result, issues) = Self.check(field, .string(value))
    #expect(result == nil)
    #expect(issues.errorList == ["\(code)@value"])
  }

  @Test("null unsets every field", arguments: UserField.allCases)
  func nullUnsets(field: UserField) {
    let (result, issues) = Self.check(field.rawValue, .null)
    #expect(issues.errors.isEmpty)
    #expect(result?.field == field)
    #expect(result?.value == .null)
  }

  @Test(
    "values must be strings or null",
    arguments: [JSONValue.int(1), .bool(true), .array([]), .object([]), .number("1.5")])
  func wrongType(value: JSONValue) {
    let (result, issues) = Self.check("first_name", value)
    #expect(result == nil)
    #expect(issues.errorList == ["wrong_type@value"])
  }

  @Test("an unknown field names the allowed ones", arguments: ["nickname", "Email", "", "phone_number"])
  func unknownField(field: String) {
    let (result, issues) = Self.check(field, .string("x"))
    #expect(result == nil)
    #expect(issues.errorList == ["unknown_field@field"])
    for allowed in UserField.allCases { #expect(issues.errors[0].message.contains(allowed.rawValue)) }
  }

  @Test("--strings truncate cuts free text only")
  func truncate() {
    let limits = F.limits(strings: .truncate)
    let (name, nameIssues) = Self.check("first_name", .string(F.repeated("é", 300)), limits: limits)
    #expect(name?.value == .string(F.repeated("é", 255)))
    #expect(nameIssues.warningList == ["string_truncated@value"])
    let (email, emailIssues) = Self.check("email", .string(F.repeated("a", 250) + "@b.com"), limits: limits)
    #expect(email == nil)
    #expect(emailIssues.errorList == ["string_too_long@value"])
  }

  @Test("the embedded code lists have their full sizes")
  func listSizes() {
    #expect(ISOCodes.countries.count == 249)
    #expect(ISOCodes.languages.count == 184)
    #expect(TimeZoneNames.all.count == 597)
  }
}
