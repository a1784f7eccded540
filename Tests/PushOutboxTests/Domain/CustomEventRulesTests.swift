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

@Suite("CustomEventRules")
struct CustomEventRulesTests {
  typealias F = DomainFixture

  static func check(
    name: String = "push_opened", _ properties: [JSONMember], limits: DomainLimits = DomainLimits()
  ) -> (stored: [JSONMember], issues: Issues) {
    var issues = Issues()
    let stored = CustomEventRules.check(name: name, properties: properties, limits: limits, issues: &issues)
    return (stored, issues)
  }

  /// Properties whose compact JSON is exactly `totalBytes` long (keys `k000`…, string values).
  static func properties(totalBytes: Int) -> [JSONMember] {
    var members: [JSONMember] = []
    var size = 2
    while true {
      let key = "k" + String(String(members.count + 1000).dropFirst())
      let overhead = (members.isEmpty ? 0 : 1) + key.utf8.count + 2 + 1 + 2
      let remaining = totalBytes - size - overhead
      if remaining <= 255 {
        members.append(JSONMember(key, .string(F.repeated("x", remaining))))
        return members
      }
      members.append(JSONMember(key, .string(F.repeated("x", 200))))
      size += overhead + 200
    }
  }

  @Test(
    "event names",
    arguments: [
      ("push_opened", [String]()), (F.repeated("a", 255), []), (F.repeated("a", 256), ["name_too_long@name"]),
      (F.repeated("é", 255), []), (F.repeated("é", 256), ["name_too_long@name"]), (F.repeated("😀", 255), []),
      ("", ["name_empty@name"]), ("$opened", ["name_dollar_prefix@name"]), ("opened$", []), (" $x", []),
      ("$" + F.repeated("a", 255), ["name_too_long@name", "name_dollar_prefix@name"]),
    ])
  func names(name: String, expected: [String]) {
    #expect(Self.check(name: name, []).issues.errorList == expected)
  }

  /// The raw-byte rules the server's one-pass scan asks (`isPlainName`, `isPlainKey`) never call
  /// plain what the full checks refuse, and call plain every name or key of at most
  /// `TextLimit.maxCharacters` bytes that they accept: each rule has one home, whichever path asks.
  @Test(
    "raw-byte rules agree with the full checks",
    arguments: [
      "push_opened", "", "$x", "x$", "time", "timE", "tim", "timex", "event_name", "event_namE", "event_nam",
      "Event_name", F.repeated("a", 255), F.repeated("a", 256), F.repeated("é", 127), F.repeated("é", 128), "é",
    ])
  func rawByteRules(text: String) {
    let raw = Array(text.utf8)
    let (name, key, nested) = raw.withUnsafeBytes {
      (
        CustomEventRules.isPlainName($0), CustomEventRules.isPlainKey($0, topLevel: true),
        CustomEventRules.isPlainKey($0, topLevel: false)
      )
    }
    let fits = TextLimit.fitsUncounted(byteCount: raw.count)
    #expect(name == (fits && Self.check(name: text, []).issues.errorList.isEmpty))
    #expect(key == (fits && Self.check([JSONMember(text, .int(1))]).issues.errorList.isEmpty))
    let inObject = [JSONMember("o", .object([JSONMember(text, .int(1))]))]
    #expect(nested == (fits && Self.check(inObject).issues.errorList.isEmpty))
  }

  @Test(
    "property keys",
    arguments: [
      (#"{"step":1}"#, [String]()),
      (#"{"":1}"#, ["key_empty@properties"]),
      (#"{"$step":1}"#, ["key_dollar_prefix@properties.$step"]),
      (#"{"st$ep":1,"a.b":2,"with space":3}"#, []),
      (#"{"time":"2026-01-02T03:04:05Z"}"#, ["reserved_property_key@properties.time"]),
      (#"{"event_name":"x"}"#, ["reserved_property_key@properties.event_name"]),
      (#"{"Time":1,"EVENT_NAME":2}"#, []),
      (#"{"o":{"time":1,"event_name":2}}"#, []),
      (#"{"o":{"$k":1}}"#, ["key_dollar_prefix@properties.o.$k"]),
      (#"{"o":{"":1}}"#, ["key_empty@properties.o"]),
      (#"{"a":[{"$k":1}]}"#, ["key_dollar_prefix@properties.a[0].$k"]),
    ])
  func keys(properties: String, expected: [String]) {
    #expect(Self.check(F.members(properties)).issues.errorList == expected)
  }

  @Test("key length: 255 characters pass, 256 fail, at any depth")
  func keyLength() {
    let ok = F.repeated("é", 255)
    let long = F.repeated("k", 256)
    let members = [
      JSONMember(ok, .int(1)), JSONMember(long, .int(2)), JSONMember("o", .object([JSONMember(long, .int(3))])),
    ]
    #expect(
      Self.check(members).issues.errorList == ["key_too_long@properties.\(long)", "key_too_long@properties.o.\(long)"])
  }

  @Test(
    "property values",
    arguments: [
      (#"{"s":"x","i":1,"n":2.5,"b":true,"f":false,"d":"2026-01-02T03:04:05Z","e":""}"#, [String]()),
      (#"{"big":123456789012345678901234567890,"neg":-1e-300}"#, []),
      (#"{"a":["x",1,2.5,true,{"k":"v"}],"o":{"p":{"q":[1,2]}}}"#, []),
      (#"{"a":[]}"#, []), (#"{"o":{}}"#, []),
      (#"{"n":null}"#, ["null_value@properties.n"]),
      (#"{"o":{"n":null}}"#, ["null_value@properties.o.n"]),
      (#"{"a":[1,null]}"#, ["invalid_array_element@properties.a[1]"]),
      (#"{"a":[[1]]}"#, ["invalid_array_element@properties.a[0]"]),
      (#"{"a":["2026-01-02T03:04:05Z"]}"#, ["datetime_in_array@properties.a[0]"]),
      (#"{"a":["2026-01-02","2026-13-02T03:04:05Z"]}"#, []),
      (#"{"a":[{"d":"2026-01-02T03:04:05Z"}]}"#, []),
      (#"{"o":{"a":[null]}}"#, ["invalid_array_element@properties.o.a[0]"]),
    ])
  func values(properties: String, expected: [String]) {
    let members = F.members(properties)
    let result = Self.check(members)
    #expect(result.issues.errorList == expected)
    #expect(result.stored == members)
  }

  @Test(
    "string values: 255 characters pass, 256 fail, at any depth",
    arguments: [
      (F.repeated("x", 255), true), (F.repeated("é", 255), true), (F.repeated("😀", 255), true),
      (F.repeated("x", 256), false), (F.repeated("é", 256), false),
    ])
  func stringLength(value: String, passes: Bool) {
    for (wrapped, path) in [
      (JSONValue.string(value), "properties.s"), (.array([.string(value)]), "properties.s[0]"),
      (.object([JSONMember("k", .string(value))]), "properties.s.k"),
    ] {
      let result = Self.check([JSONMember("s", wrapped)])
      #expect(result.issues.errorList == (passes ? [] : ["string_too_long@\(path)"]))
      #expect(result.issues.warnings.isEmpty)
    }
  }

  @Test("--strings truncate cuts strings to 255 characters and warns, at any depth")
  func truncate() {
    let long = F.repeated("é", 300)
    let cut = F.repeated("é", 255)
    let members = [
      JSONMember("a", .int(1)), JSONMember("s", .string(long)),
      JSONMember("o", .object([JSONMember("k", .string(long)), JSONMember("n", .int(2))])),
      JSONMember("l", .array([.string("ok"), .string(long)])),
    ]
    let result = Self.check(members, limits: F.limits(strings: .truncate))
    #expect(result.issues.errors.isEmpty)
    #expect(
      result.issues.warningList == [
        "string_truncated@properties.s", "string_truncated@properties.o.k", "string_truncated@properties.l[1]",
      ])
    #expect(
      result.stored == [
        JSONMember("a", .int(1)), JSONMember("s", .string(cut)),
        JSONMember("o", .object([JSONMember("k", .string(cut)), JSONMember("n", .int(2))])),
        JSONMember("l", .array([.string("ok"), .string(cut)])),
      ])
  }

  @Test("--strings truncate never truncates names or keys")
  func truncateNotKeys() {
    let long = F.repeated("k", 256)
    let result = Self.check(name: long, [JSONMember(long, .int(1))], limits: F.limits(strings: .truncate))
    #expect(result.issues.errorList == ["name_too_long@name", "key_too_long@properties.\(long)"])
  }

  @Test("property count: 256 pass, 257 fail", arguments: [(255, true), (256, true), (257, false)])
  func count(n: Int, passes: Bool) {
    let members = (0..<n).map { JSONMember("p\($0)", .int(Int64($0))) }
    #expect(Self.check(members).issues.errorList == (passes ? [] : ["too_many_properties@properties"]))
  }

  @Test("serialized size: 51200 bytes pass, 51201 fail", arguments: [(51_199, true), (51_200, true), (51_201, false)])
  func size(bytes: Int, passes: Bool) {
    let members = Self.properties(totalBytes: bytes)
    #expect(JSONValue.object(members).jsonBytes.count == bytes)
    #expect(members.count <= 256)
    #expect(Self.check(members).issues.errorList == (passes ? [] : ["properties_too_large@properties"]))
  }

  @Test("the size limit follows --max-properties-bytes and counts escapes exactly")
  func sizeFlag() {
    var limits = DomainLimits()
    limits.maxPropertiesBytes = 18
    let exact = [JSONMember("k", .string("a\nb\u{1}"))]  // {"k":"a\nb\u0001"} = 18 bytes
    #expect(JSONValue.object(exact).jsonBytes.count == 18)
    #expect(Self.check(exact, limits: limits).issues.errorList == [])
    let over = [JSONMember("k", .string("a\nb\u{1}\""))]  // 20 bytes
    #expect(Self.check(over, limits: limits).issues.errorList == ["properties_too_large@properties"])
    limits.maxPropertiesBytes = 102_400
    #expect(Self.check(Self.properties(totalBytes: 53_000), limits: limits).issues.errorList == [])
  }

  @Test("the size is measured after truncation")
  func sizeAfterTruncation() {
    var limits = F.limits(strings: .truncate)
    limits.maxPropertiesBytes = 263  // {"s":"<255 x>"} is 263 bytes
    let result = Self.check([JSONMember("s", .string(F.repeated("x", 400)))], limits: limits)
    #expect(result.issues.errors.isEmpty)
    #expect(result.issues.warningList == ["string_truncated@properties.s"])
  }

  @Test("every problem is reported at once")
  func allProblems() {
    let members = F.members(#"{"time":1,"$x":null,"a":[[],"2026-01-02T03:04Z"]}"#)
    #expect(
      Self.check(name: "", members).issues.errorList == [
        "name_empty@name", "reserved_property_key@properties.time", "key_dollar_prefix@properties.$x",
        "null_value@properties.$x", "invalid_array_element@properties.a[0]", "datetime_in_array@properties.a[1]",
      ])
  }

  @Test(
    "checkTime",
    arguments: [
      ("2026-01-02T03:04:05.678Z", Int64?(1_767_323_045_678)), ("2026-01-02T04:04:05.678+01:00", 1_767_323_045_678),
      ("2026-01-02", nil), ("yesterday", nil), ("2026-02-30T00:00Z", nil),
    ])
  func checkTime(text: String, expected: Int64?) {
    var issues = Issues()
    #expect(CustomEventRules.checkTime(text, issues: &issues) == expected)
    #expect(issues.errorList == (expected == nil ? ["invalid_time@time"] : []))
  }
}
