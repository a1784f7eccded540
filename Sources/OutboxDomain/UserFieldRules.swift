package import OutboxJSON
import OutboxSupport

/// A default Braze user profile field. The raw value is the REST field name
/// (`user_attributes_object.md`, "Braze user profile fields").
package enum UserField: String, Sendable, CaseIterable {
  case email, first_name, last_name, phone, gender, dob, country, home_city, language, time_zone
  case email_subscribe, push_subscribe
}

/// Braze's rules for default user fields (`saveUserAttribute`).
///
/// Sources: field rules from `user_attributes_object.md`; "All string values such as first name, last name,
/// country, and home city are limited to 255 characters" (Android docs); email syntax from the Web SDK
/// `validation-utils.js` (`/^[^@\s]+@[^@\s]+\.[^@\s]+$/`); gender letters and the Web SDK's lower case input
/// (`setting_user_attributes`); SDK subscription spellings from `Braze.User.SubscriptionState`.
///
/// Decisions:
/// - `--strings truncate` applies only to free text (`first_name`, `last_name`, `home_city`); a cut email,
///   phone or code would be wrong, so those are always rejected when too long.
/// - `phone`: an optional leading `+`, then digits with optional spaces, `-`, `.`, `(` `)` between them,
///   7–15 digits in all (E.164 allows 15). Stored compact: `+1 (555) 010-9999` → `+15550109999`.
/// - `gender`: `M F O N P` in either case; `u`/`U`, the SDK word `unknown` and null mean unknown and store
///   null; the SDK names `male`, `female`, `other`, `not_applicable`/`notApplicable`,
///   `prefer_not_to_say`/`preferNotToSay` map to their letters. The string `"nil"` is rejected, because
///   a client library sent it where null was meant (domain.md §4, `lingoda/braze` `Gender::UNKNOWN`).
/// - `time_zone`: an IANA name from `TimeZoneNames`; a case-insensitive match is normalised to its spelling.
/// - Subscription states: case, `_`, `-` and spaces are ignored (`optedIn`, `opted-in`, `OPTED_IN`).
/// - Null unsets every field; an empty string is refused for every field except free text.
package enum UserFieldRules {
  /// Checks a `saveUserAttribute` and returns the field with the normalized value to store.
  ///
  /// Error codes (at `field` or `value`): `unknown_field`, `wrong_type`, `string_too_long`, `invalid_email`,
  /// `invalid_phone`, `invalid_gender`, `invalid_date`, `invalid_country`, `invalid_language`,
  /// `invalid_time_zone`, `invalid_subscription_state`. Warning: `string_truncated`.
  package static func check(
    field: String, value: JSONValue, limits: DomainLimits, issues: inout Issues
  ) -> (field: UserField, value: JSONValue)? {
    guard field.isASCII, let userField = UserField(rawValue: field) else {
      let allowed = UserField.allCases.map(\.rawValue).joined(separator: ", ")
      issues.error(
        "field", "unknown_field",
        "unknown user field \"\(field)\"; allowed: \(allowed) (use saveCustomAttribute for custom keys)")
      return nil
    }
    switch value {
    case .null:
      return (userField, .null)
    case .string(let s):
      guard let normalized = check(userField, s, limits: limits, issues: &issues) else { return nil }
      return (userField, normalized)
    default:
      issues.error("value", "wrong_type", "value must be a string, or null to unset, not \(value.typeName)")
      return nil
    }
  }

  private static func check(_ field: UserField, _ s: String, limits: DomainLimits, issues: inout Issues) -> JSONValue? {
    switch field {
    case .first_name, .last_name, .home_city:
      let before = issues.errors.count
      let cut = TextLimit.checkValue(s, path: { "value" }, policy: limits.strings, issues: &issues)
      return issues.errors.count == before ? .string(cut ?? s) : nil
    case .email:
      guard TextLimit.fits(s) else { return tooLong(s, &issues) }
      return isEmail(s) ? .string(s) : invalid("invalid_email", "\"\(s)\" is not an email address", &issues)
    case .phone:
      guard TextLimit.fits(s) else { return tooLong(s, &issues) }
      return phone(s).map(JSONValue.string)
        ?? invalid(
          "invalid_phone", "phone must be E.164-like: optional +, then 7–15 digits (spaces, -, ., () allowed)", &issues)
    case .gender:
      return gender(s)
        ?? invalid(
          "invalid_gender", "gender must be M, F, O, N, P, or u/null for unknown (the string \"nil\" is not null)",
          &issues)
    case .dob:
      return ISO8601.isDate(s) ? .string(s) : invalid("invalid_date", "dob must be a real date YYYY-MM-DD", &issues)
    case .country:
      let upper = asciiCased(s, upper: true)
      return upper.isASCII && ISOCodes.countries.contains(upper)
        ? .string(upper) : invalid("invalid_country", "country must be an ISO 3166-1 alpha-2 code such as US", &issues)
    case .language:
      let lower = asciiCased(s, upper: false)
      return lower.isASCII && ISOCodes.languages.contains(lower)
        ? .string(lower) : invalid("invalid_language", "language must be an ISO 639-1 code such as en", &issues)
    case .time_zone:
      return timeZone(s).map(JSONValue.string)
        ?? invalid("invalid_time_zone", "time_zone must be an IANA time zone name such as America/New_York", &issues)
    case .email_subscribe, .push_subscribe:
      return subscription(s).map(JSONValue.string)
        ?? invalid(
          "invalid_subscription_state", "\(field.rawValue) must be opted_in, subscribed or unsubscribed", &issues)
    }
  }

  private static func invalid(_ code: String, _ message: String, _ issues: inout Issues) -> JSONValue? {
    issues.error("value", code, message)
    return nil
  }

  private static func tooLong(_ s: String, _ issues: inout Issues) -> JSONValue? {
    invalid(
      "string_too_long",
      "value has \(TextLimit.characterCount(s)) characters; Braze allows at most \(TextLimit.maxCharacters)", &issues)
  }

  /// `^[^@\s]+@[^@\s]+\.[^@\s]+$`: one `@`, no whitespace, and a `.` inside the domain part.
  static func isEmail(_ s: String) -> Bool {
    let scalars = s.unicodeScalars
    guard !scalars.contains(where: { $0.properties.isWhitespace }),
      let at = scalars.firstIndex(of: "@"), at != scalars.startIndex
    else { return false }
    let domain = scalars[scalars.index(after: at)...]
    return !domain.contains("@") && domain.dropFirst().dropLast().contains(".")
  }

  /// The compact phone number (`+` and digits), or nil.
  static func phone(_ s: String) -> String? {
    var out = ""
    var digits = 0
    for (n, c) in s.unicodeScalars.enumerated() {
      switch c {
      case "0"..."9": digits += 1; out.unicodeScalars.append(c)
      case "+" where n == 0: out = "+"
      case " ", "-", ".", "(", ")": continue
      default: return nil
      }
    }
    return (7...15).contains(digits) ? out : nil
  }

  static func gender(_ s: String) -> JSONValue? {
    switch squeezed(s) {
    case "m", "male": .string("M")
    case "f", "female": .string("F")
    case "o", "other": .string("O")
    case "n", "notapplicable": .string("N")
    case "p", "prefernottosay": .string("P")
    case "u", "unknown": .null
    default: nil
    }
  }

  static func subscription(_ s: String) -> String? {
    switch squeezed(s) {
    case "optedin": "opted_in"
    case "subscribed": "subscribed"
    case "unsubscribed": "unsubscribed"
    default: nil
    }
  }

  static func timeZone(_ s: String) -> String? {
    guard s.isASCII else { return nil }
    if TimeZoneNames.all.contains(s) { return s }
    let lower = asciiCased(s, upper: false)
    return TimeZoneNames.all.first { asciiCased($0, upper: false) == lower }
  }

  /// ASCII lower case without `_`, `-` and spaces.
  static func squeezed(_ s: String) -> String {
    String(
      String.UnicodeScalarView(
        asciiCased(s, upper: false).unicodeScalars.filter { $0 != "_" && $0 != "-" && $0 != " " }))
  }

  /// `s` with ASCII letters changed to upper or lower case.
  static func asciiCased(_ s: String, upper: Bool) -> String {
    String(
      decoding: s.utf8.map { b in
        if upper, b >= 0x61, b <= 0x7A { return b - 0x20 }
        if !upper, b >= 0x41, b <= 0x5A { return b + 0x20 }
        return b
      }, as: UTF8.self)
  }
}
