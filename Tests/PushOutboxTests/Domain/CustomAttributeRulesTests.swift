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

@Suite("CustomAttributeRules")
struct CustomAttributeRulesTests {
  typealias F = DomainFixture

  static func check(
    key: String = "plan", _ op: AttributeOp = .set, _ value: JSONValue, limits: DomainLimits = DomainLimits()
  ) -> (value: JSONValue, issues: Issues) {
    var issues = Issues()
    let stored = CustomAttributeRules.check(key: key, op: op, value: value, limits: limits, issues: &issues)
    return (stored, issues)
  }

  static func strings(_ items: [String]) -> JSONValue { .array(items.map(JSONValue.string)) }

  @Test(
    "keys",
    arguments: [
      ("plan", [String]()), ("Certification Registration Email", []), ("$plan", []), ("a.b", []),
      (F.repeated("k", 255), []), (F.repeated("é", 255), []), ("", ["key_empty@key"]),
      (F.repeated("k", 256), ["key_too_long@key"]), ("$add", ["reserved_key@key"]), ("$time", ["reserved_key@key"]),
      ("$google_ad_user_data", ["reserved_key@key"]), ("$google_ad_personalization", ["reserved_key@key"]),
      ("$update", ["reserved_key@key"]), ("$remove", ["reserved_key@key"]), ("$identifier_key", ["reserved_key@key"]),
      ("$identifier_value", ["reserved_key@key"]), ("$new_object", ["reserved_key@key"]),
      ("external_id", ["reserved_key@key"]), ("user_alias", ["reserved_key@key"]), ("braze_id", ["reserved_key@key"]),
      ("_update_existing_only", ["reserved_key@key"]), ("subscription_groups", ["reserved_key@key"]),
      ("Email", []),
    ])
  func keys(key: String, expected: [String]) {
    #expect(Self.check(key: key, .set, .int(1)).issues.errorList == expected)
  }

  @Test("every default user field is refused as a key, with a hint", arguments: UserField.allCases)
  func userFieldKeys(field: UserField) {
    let issues = Self.check(key: field.rawValue, .set, .string("x")).issues
    #expect(issues.errorList == ["reserved_user_field@key"])
    #expect(issues.errors[0].message.contains("saveUserAttribute"))
  }

  @Test(
    "set accepts scalars unchanged",
    arguments: [
      JSONValue.string("gold"), .string(""), .int(3), .int(-3), .number("2.5"), .bool(true), .bool(false),
      .string("2026-01-02T03:04:05Z"), .string(F.repeated("é", 255)), .array([]),
    ])
  func setScalars(value: JSONValue) {
    let result = Self.check(.set, value)
    #expect(result.issues.errors.isEmpty && result.issues.warnings.isEmpty)
    #expect(result.value == value)
  }

  @Test("set refuses null and long strings; --strings truncate cuts them")
  func setProblems() {
    #expect(Self.check(.set, .null).issues.errorList == ["wrong_type@value"])
    #expect(Self.check(.set, .string(F.repeated("x", 256))).issues.errorList == ["string_too_long@value"])
    let cut = Self.check(.set, .string(F.repeated("é", 256)), limits: F.limits(strings: .truncate))
    #expect(cut.value == .string(F.repeated("é", 255)))
    #expect(cut.issues.warningList == ["string_truncated@value"])
    #expect(cut.issues.errors.isEmpty)
  }

  @Test(
    "string arrays: at most --array-limit elements, the newest kept",
    arguments: [(24, false), (25, false), (26, true), (40, true)])
  func arrayLimit(count: Int, truncated: Bool) {
    let items = (1...count).map { "t\($0)" }
    for op in [AttributeOp.set, .add, .remove] {
      let result = Self.check(op, Self.strings(items))
      #expect(result.issues.errors.isEmpty)
      #expect(result.value == Self.strings(Array(items.suffix(25))))
      #expect(result.issues.warningList == (truncated ? ["array_truncated@value"] : []))
    }
  }

  @Test("--array-limit changes the cap")
  func arrayLimitFlag() {
    let items = (1...101).map { "t\($0)" }
    let result = Self.check(.set, Self.strings(items), limits: F.limits(arrayLimit: 100))
    #expect(result.value == Self.strings(Array(items.dropFirst())))
    #expect(result.issues.warningList == ["array_truncated@value"])
  }

  @Test("duplicates are removed keeping the first, before the cap")
  func dedupe() {
    let result = Self.check(.set, Self.strings(["hotdog", "hotdog", "pizza", "hotdog", "taco", "pizza"]))
    #expect(result.value == Self.strings(["hotdog", "pizza", "taco"]))
    #expect(result.issues.warningList == ["array_duplicates_removed@value"])
    // 30 elements with 10 repeats: 20 unique, under the cap.
    let items = (0..<30).map { "t\($0 % 20)" }
    let capped = Self.check(.add, Self.strings(items))
    #expect(capped.value == Self.strings((0..<20).map { "t\($0)" }))
    #expect(capped.issues.warningList == ["array_duplicates_removed@value"])
  }

  @Test("array elements must be strings of at most 255 characters")
  func arrayElements() {
    #expect(
      Self.check(.set, F.json(#"["a",1,null,["b"]]"#)).issues.errorList == [
        "invalid_array_element@value[1]", "invalid_array_element@value[2]", "invalid_array_element@value[3]",
      ])
    #expect(Self.check(.add, F.json(#"["a",true]"#)).issues.errorList == ["invalid_array_element@value[1]"])
    #expect(Self.check(.set, F.json(#"[{"a":1},"b"]"#)).issues.errorList == ["invalid_array_element@value[0]"])
    let long = Self.strings(["ok", F.repeated("x", 256)])
    #expect(Self.check(.set, long).issues.errorList == ["string_too_long@value[1]"])
    let cut = Self.check(.remove, long, limits: F.limits(strings: .truncate))
    #expect(cut.value == Self.strings(["ok", F.repeated("x", 255)]))
    #expect(cut.issues.warningList == ["string_truncated@value[1]"])
  }

  @Test(
    "op types",
    arguments: [
      (AttributeOp.inc, JSONValue.int(5), [String]()), (.inc, .int(-2), []),
      (.inc, .number("2.5"), ["wrong_type@value"]),
      (.inc, .number("1e3"), ["wrong_type@value"]), (.inc, .string("5"), ["wrong_type@value"]),
      (.inc, .null, ["wrong_type@value"]),
      (.inc, .number("99999999999999999999"), ["out_of_range@value"]),
      (.add, .string("a"), ["wrong_type@value"]), (.remove, .null, ["wrong_type@value"]), (.add, .array([]), []),
      (.unset, .null, []), (.unset, .int(1), ["wrong_type@value"]), (.unset, .string(""), ["wrong_type@value"]),
    ])
  func ops(op: AttributeOp, value: JSONValue, expected: [String]) {
    let result = Self.check(op, value)
    #expect(result.issues.errorList == expected)
    if op == .unset { #expect(result.value == .null) }
    if op == .inc && expected.isEmpty { #expect(result.value == value) }
  }

  @Test(
    "nested objects",
    arguments: [
      (#"{"make":"Ford","year":2020,"price":1.5,"used":false,"tags":["a","a"],"owner":{"name":"x"}}"#, [String]()),
      (#"{"bought":{"$time":"2026-01-02T03:04:05Z"}}"#, []),
      (#"{"bought":{"$time":"2026-01-02"}}"#, []),
      (#"{"bought":{"$time":"3000-12-31T00:00Z"}}"#, []),
      (#"{"bought":{"$time":"3001-01-01T00:00Z"}}"#, ["invalid_time@value.bought.$time"]),
      (#"{"bought":{"$time":"soon"}}"#, ["invalid_time@value.bought.$time"]),
      (#"{"bought":{"$time":1767323045}}"#, ["invalid_time@value.bought.$time"]),
      (#"{"bought":{"$time":"2026-01-02T03:04Z","x":1}}"#, ["invalid_nested_key@value.bought.$time"]),
      (#"{"first name":"x"}"#, ["invalid_nested_key@value.first name"]),
      (#"{"a.b":1}"#, ["invalid_nested_key@value.a.b"]),
      (#"{"pri$e":1}"#, ["invalid_nested_key@value.pri$e"]),
      (#"{"tab\tkey":1}"#, ["invalid_nested_key@value.tab\tkey"]),
      (#"{"":1}"#, ["key_empty@value"]),
      (#"{"a":null}"#, ["null_in_object@value.a"]),
      (#"{"a":{"b":[1,null]}}"#, ["null_in_object@value.a.b[1]"]),
      (#"[{"id":1,"name":"x"},{"id":2}]"#, []),
      (#"[{"id":null}]"#, ["null_in_object@value[0].id"]),
      (#"[{"a b":1}]"#, ["invalid_nested_key@value[0].a b"]),
    ])
  func nested(value: String, expected: [String]) {
    let json = F.json(value)
    let result = Self.check(.set, json)
    #expect(result.issues.errorList == expected)
    #expect(result.value == json)  // nested arrays are not deduplicated or capped
  }

  @Test("nested keys and strings: 255 characters pass, 256 fail or are truncated")
  func nestedLengths() {
    let key255 = F.repeated("é", 255)
    let key256 = F.repeated("k", 256)
    let ok = JSONValue.object([JSONMember(key255, .string(F.repeated("x", 255)))])
    #expect(Self.check(.set, ok).issues.errorList == [])
    let bad = JSONValue.object([JSONMember(key256, .int(1)), JSONMember("s", .array([.string(F.repeated("x", 256))]))])
    #expect(Self.check(.set, bad).issues.errorList == ["key_too_long@value.\(key256)", "string_too_long@value.s[0]"])
    let long = JSONValue.object([JSONMember("s", .string(F.repeated("x", 300)))])
    let cut = Self.check(.set, long, limits: F.limits(strings: .truncate))
    #expect(cut.value == .object([JSONMember("s", .string(F.repeated("x", 255)))]))
    #expect(cut.issues.warningList == ["string_truncated@value.s"])
  }

  /// `{"a":["x…",…]}` padded to exactly `bytes` of compact JSON.
  static func nestedObject(bytes: Int) -> JSONValue {
    var items: [JSONValue] = []
    var size = #"{"a":[]}"#.utf8.count
    while true {
      let comma = items.isEmpty ? 0 : 1
      let remaining = bytes - size - comma - 2
      if remaining <= 255 {
        items.append(.string(F.repeated("x", remaining)))
        return .object([JSONMember("a", .array(items))])
      }
      items.append(.string(F.repeated("x", 200)))
      size += comma + 202
    }
  }

  @Test("nested size: 102400 bytes pass, 102401 fail", arguments: [(102_400, true), (102_401, false)])
  func nestedSize(bytes: Int, passes: Bool) {
    let value = Self.nestedObject(bytes: bytes)
    #expect(value.jsonBytes.count == bytes)
    #expect(Self.check(.set, value).issues.errorList == (passes ? [] : ["object_too_large@value"]))
  }

  @Test("nesting depth is capped at 50")
  func depth() {
    func nest(_ n: Int) -> JSONValue { n == 0 ? .int(1) : .object([JSONMember("a", nest(n - 1))]) }
    #expect(Self.check(.set, nest(50)).issues.errorList == [])
    let errors = Self.check(.set, nest(51)).issues.errorList
    #expect(errors.count == 1)
    #expect(errors.first?.hasPrefix("object_too_deep@value.a.a") == true)
  }
}
