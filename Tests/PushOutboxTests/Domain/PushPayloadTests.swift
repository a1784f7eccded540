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

@Suite("PushPayload")
struct PushPayloadTests {
  typealias F = DomainFixture

  static func parse(
    _ payload: JSONValue, require: String? = nil, categories: String? = nil
  ) -> (result: JSONValue, issues: Issues) {
    var issues = Issues()
    let result = PushPayload.parse(
      payload: payload, require: require.map(F.json), categories: categories.map(F.json), issues: &issues)
    return (result, issues)
  }

  static func warningCodes(_ result: JSONValue) -> [String] {
    (result["warnings"]?.arrayValue ?? []).map { w in
      (w["code"]?.stringValue ?? "?") + (w["key"]?.stringValue.map { "@" + $0 } ?? "")
    }
  }

  static let rich = #"""
    {"aps":{"alert":{"title":"Hi","subtitle":"Sub","body":"Body"},"badge":3,"sound":"ping.caf","category":"lab_register",
    "thread-id":"t1","mutable-content":1},"ab":{"att":{"url":"https://x.example/a.jpg","type":"jpg"},"c":"campaign"},
    "ab_uri":"myapp://cert","braze_id":"abc123","cert_title":"Swift","completed_session_count":"3"}
    """#

  @Test("a rich Braze push: every field, in order")
  func rich() {
    let (result, issues) = Self.parse(F.json(Self.rich))
    #expect(issues.errors.isEmpty)
    #expect(
      result.jsonText == #"""
        {"braze":true,"silent":false,"internal":false,"pushStory":false,"category":"lab_register","threadId":"t1",\#
        "mutableContent":true,"alert":{"title":"Hi","subtitle":"Sub","body":"Body"},"badge":3,"sound":"ping.caf",\#
        "deepLink":"myapp://cert","attachment":{"url":"https://x.example/a.jpg","type":"jpg"},"brazeId":"abc123",\#
        "extras":{"cert_title":"Swift","completed_session_count":"3"},"values":{},"warnings":[],"diagnostics":[]}
        """#)
  }

  @Test("a string payload holding JSON parses the same as the object")
  func stringPayload() {
    #expect(Self.parse(.string(Self.rich)).result == Self.parse(F.json(Self.rich)).result)
  }

  @Test("a minimal non-Braze push gives defaults and nulls")
  func minimal() {
    let (result, issues) = Self.parse(F.json(#"{"aps":{"alert":"Hello"},"ab":{}}"#))
    #expect(issues.errors.isEmpty)
    #expect(
      result.jsonText == #"""
        {"braze":false,"silent":false,"internal":false,"pushStory":false,"category":null,"threadId":null,\#
        "mutableContent":false,"alert":{"title":null,"subtitle":null,"body":"Hello"},"badge":null,"sound":null,\#
        "deepLink":null,"attachment":null,"brazeId":null,"extras":{},"values":{},"warnings":[],\#
        "diagnostics":[{"code":"ab-empty","severity":"warning","path":"ab",\#
        "message":"ab is empty, so Braze's SDK does not treat this push as Braze's",\#
        "href":"https://github.com/braze-inc/braze-swift-sdk/blob/main/Sources/BrazeKitCompat/AppboyKit/ABKPushUtils.m"}]}
        """#)
    #expect(Self.parse(F.json("{}")).result["alert"] == .null)
  }

  @Test(
    "flags read like the SDK's boolValue and intValue",
    arguments: [
      (#"{"aps":{"content-available":1},"ab":{"x":1}}"#, "silent", true),
      (#"{"aps":{"content-available":1}}"#, "silent", true),
      (#"{"aps":{"content-available":"1"}}"#, "silent", true),
      (#"{"aps":{"content-available":0}}"#, "silent", false),
      (#"{"aps":{"content-available":2}}"#, "silent", false),
      (#"{"aps":{"mutable-content":1}}"#, "mutableContent", true),
      (#"{"appboy_uninstall_tracking":true}"#, "internal", true),
      (#"{"appboy_uninstall_tracking":1}"#, "internal", true),
      (#"{"appboy_uninstall_tracking":"YES"}"#, "internal", true),
      (#"{"appboy_uninstall_tracking":"false"}"#, "internal", false),
      (#"{"appboy_uninstall_tracking":0}"#, "internal", false),
      (#"{"ab":{"ab_carousel":true}}"#, "pushStory", true),
      (#"{"ab":{"ab_carousel":"1"}}"#, "pushStory", true),
      (#"{"ab":{"ab_carousel":false}}"#, "pushStory", false),
      (#"{"ab":{"ab_carousel":null}}"#, "braze", true),
      (#"{"ab":[1]}"#, "braze", false),
      (#"{"ab":"x"}"#, "braze", false),
    ])
  func flags(payload: String, field: String, expected: Bool) {
    #expect(Self.parse(F.json(payload)).result[field] == .bool(expected))
  }

  @Test("alert, sound and attachment variants")
  func variants() {
    let critical = Self.parse(
      F.json(#"{"aps":{"sound":{"critical":1,"name":"alarm.caf","volume":1.0},"alert":{"body":"B","loc-key":"k"}}}"#))
    #expect(critical.result["sound"] == .string("alarm.caf"))
    #expect(critical.result["alert"]?.jsonText == #"{"title":null,"subtitle":null,"body":"B"}"#)
    let noType = Self.parse(F.json(#"{"ab":{"att":{"url":"https://x.example/v.mp4"}}}"#))
    #expect(noType.result["attachment"]?.jsonText == #"{"url":"https://x.example/v.mp4","type":null}"#)
    #expect(Self.parse(F.json(#"{"ab":{"att":{"type":"jpg"}}}"#)).result["attachment"] == .null)
    #expect(Self.parse(F.json(#"{"aps":{"badge":"3"}}"#)).result["badge"] == .null)
  }

  @Test(
    "a payload that is not an object is an error",
    arguments: [
      (JSONValue.int(1), "wrong_type"), (.array([]), "wrong_type"), (.null, "wrong_type"),
      (.string("[1]"), "wrong_type"),
      (.string("\"x\""), "wrong_type"), (.string("{\"a\":"), "invalid_json"), (.string(""), "invalid_json"),
      (.string("not json"), "invalid_json"),
    ])
  func notObject(payload: JSONValue, code: String) {
    let (result, issues) = Self.parse(payload)
    #expect(result == .null)
    #expect(issues.errorList == ["\(code)@payload"])
  }

  @Test(
    "required keys coerce dashboard strings",
    arguments: [
      ("string", #""Swift""#, #""Swift""#), ("string", #""""#, #""""#),
      ("integer", "3", "3"), ("integer", #""3""#, "3"), ("integer", #""-12""#, "-12"),
      ("number", "2.5", "2.5"), ("number", #""2.5""#, "2.5"), ("number", #""3""#, "3"), ("number", "3", "3"),
      ("number", #""1e3""#, "1e3"), ("boolean", "true", "true"), ("boolean", #""true""#, "true"),
      ("boolean", #""false""#, "false"),
      ("object", #"{"a":1}"#, #"{"a":1}"#), ("object", #""{\"a\":[1]}""#, #"{"a":[1]}"#),
      ("array", "[1,2]", "[1,2]"), ("array", #""[\"x\"]""#, #"["x"]"#),
      ("url", #""https://x.example/a?b=1""#, #""https://x.example/a?b=1""#),
      ("url", #""myapp://cert/3""#, #""myapp://cert/3""#),
      ("date", #""2026-02-28""#, #""2026-02-28""#),
      ("datetime", #""2026-01-02T03:04:05Z""#, #""2026-01-02T03:04:05Z""#),
    ])
  func coercions(type: String, value: String, typed: String) {
    let (result, issues) = Self.parse(F.json(#"{"k":\#(value)}"#), require: #"{"k":"\#(type)"}"#)
    #expect(issues.errors.isEmpty)
    #expect(result["values"]?.jsonText == #"{"k":\#(typed)}"#)
    #expect(result["extras"]?.jsonText == #"{"k":\#(value)}"#)  // extras keep the raw value
  }

  @Test(
    "required key failures carry key, expected and got",
    arguments: [
      ("integer", nil, "missing", nil), ("integer", "2.5", "wrong_type", "number"),
      ("integer", "true", "wrong_type", "boolean"),
      ("integer", #""3.0""#, "invalid", "string"), ("integer", #""three""#, "invalid", "string"),
      ("integer", #""007""#, "invalid", "string"),
      ("integer", "99999999999999999999", "invalid", "integer"),
      ("integer", #""99999999999999999999""#, "invalid", "string"),
      ("integer", "null", "wrong_type", "null"), ("number", #""1.""#, "invalid", "string"),
      ("number", "[1]", "wrong_type", "array"),
      ("boolean", #""TRUE""#, "invalid", "string"), ("boolean", #""1""#, "invalid", "string"),
      ("boolean", "1", "wrong_type", "integer"),
      ("string", "3", "wrong_type", "integer"), ("object", #""[1]""#, "invalid", "string"),
      ("object", "[]", "wrong_type", "array"),
      ("array", #""{}""#, "invalid", "string"), ("url", #""not a url""#, "invalid", "string"),
      ("url", #""://x""#, "invalid", "string"),
      ("url", #""https:""#, "invalid", "string"), ("url", "1", "wrong_type", "integer"),
      ("date", #""2026-02-30""#, "invalid", "string"),
      ("datetime", #""2026-01-02""#, "invalid", "string"), ("date", #""""#, "invalid", "string"),
    ] as [(String, String?, String, String?)])
  func failures(type: String, value: String?, code: String, got: String?) {
    let payload = value.map { #"{"k":\#($0)}"# } ?? "{}"
    let (result, issues) = Self.parse(F.json(payload), require: #"{"k":"\#(type)"}"#)
    #expect(issues.errorList == ["\(code)@payload.k"])
    let issue = issues.errors.first
    #expect(
      issue?.extra == [
        JSONMember("key", .string("k")), JSONMember("expected", .string(type)),
        JSONMember("got", got.map(JSONValue.string) ?? .null),
      ])
    #expect(issue?.json["key"] == .string("k"))
    #expect(result["values"] == .object([]))
  }

  @Test("every required failure is listed; passing keys still get values, in require order")
  func manyRequired() {
    let (result, issues) = Self.parse(
      F.json(#"{"a":"1","b":"x","c":"true"}"#), require: #"{"c":"boolean","a":"integer","b":"integer","d":"string"}"#)
    #expect(issues.errorList == ["invalid@payload.b", "missing@payload.d"])
    #expect(result["values"]?.jsonText == #"{"c":true,"a":1}"#)
  }

  @Test(
    "bad require or categories params",
    arguments: [
      (#"["k"]"#, nil, ["wrong_type@require"]), (#"{"k":"int"}"#, nil, ["unknown_type@require.k"]),
      (#"{"k":1}"#, nil, ["wrong_type@require.k"]), (nil, #""lab""#, ["wrong_type@categories"]),
      (nil, #"["lab",1]"#, ["wrong_type@categories[1]"]), ("null", "null", []),
    ] as [(String?, String?, [String])])
  func badParams(require: String?, categories: String?, expected: [String]) {
    #expect(Self.parse(F.json(#"{"k":"1"}"#), require: require, categories: categories).issues.errorList == expected)
  }

  @Test(
    "warnings",
    arguments: [
      (#"{"t":"Hi {{${first_name}}}"}"#, nil, nil, ["liquid_unrendered@t"]),
      (#"{"t":"{% if x %}y{% endif %}"}"#, nil, nil, ["liquid_unrendered@t"]),
      (
        #"{"aps":{"alert":{"body":"Hi {{name}}"}},"o":[{"x":"{%"}]}"#, nil, nil,
        ["liquid_unrendered@aps", "liquid_unrendered@o"]
      ),
      (#"{"t":"{ {","u":"%}","v":"{}"}"#, nil, nil, []),
      (#"{"k":""}"#, #"{"k":"string"}"#, nil, ["empty_required_value@k"]),
      (#"{"braze_id":123}"#, nil, nil, ["braze_id_not_string@braze_id"]),
      (#"{"braze_id":null}"#, nil, nil, ["braze_id_not_string@braze_id"]),
      (#"{"braze_id":""}"#, nil, nil, ["braze_id_empty@braze_id"]),
      (#"{"aps":{"category":"match_game"}}"#, nil, #"["lab_register"]"#, ["category_not_registered"]),
      (#"{"aps":{"category":"lab_register"}}"#, nil, #"["lab_register"]"#, []),
      (#"{"aps":{"category":"lab_register"}}"#, nil, nil, []),
      (#"{"aps":{"category":"x"}}"#, nil, "[]", ["category_not_registered"]),
    ] as [(String, String?, String?, [String])])
  func warnings(payload: String, require: String?, categories: String?, expected: [String]) {
    let (result, issues) = Self.parse(F.json(payload), require: require, categories: categories)
    #expect(issues.errors.isEmpty)
    #expect(Self.warningCodes(result) == expected)
    #expect(issues.warnings.isEmpty)  // payload warnings live in the result only
  }

  @Test("an empty required value of a non-string type warns and fails")
  func emptyRequiredInteger() {
    let (result, issues) = Self.parse(F.json(#"{"n":""}"#), require: #"{"n":"integer"}"#)
    #expect(Self.warningCodes(result) == ["empty_required_value@n"])
    #expect(issues.errorList == ["invalid@payload.n"])
  }

  @Test("payload_too_large above 4096 compact bytes", arguments: [(4096, false), (4097, true)])
  func tooLarge(bytes: Int, warns: Bool) {
    let overhead = #"{"x":""}"#.utf8.count
    let payload = JSONValue.object([JSONMember("x", .string(F.repeated("a", bytes - overhead)))])
    #expect(payload.jsonBytes.count == bytes)
    let result = Self.parse(payload).result
    #expect(Self.warningCodes(result) == (warns ? ["payload_too_large"] : []))
    if warns { #expect(result["warnings"]?.arrayValue?.first?["key"] == nil) }
  }

  @Test("warning objects are {code, key?, message}")
  func warningShape() {
    let result = Self.parse(F.json(#"{"braze_id":1}"#)).result
    let w = result["warnings"]?.arrayValue?.first
    #expect(w?.objectValue?.map(\.key) == ["code", "key", "message"])
  }
}
