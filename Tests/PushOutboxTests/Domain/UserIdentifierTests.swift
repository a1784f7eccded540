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

@Suite("UserIdentifier")
struct UserIdentifierTests {
  typealias F = DomainFixture

  @Test(
    "each variant parses and writes its wire, track and key forms",
    arguments: [
      (#"{"externalId":"u1"}"#, UserIdentifier.externalId("u1"), #"{"external_id":"u1"}"#, "x:u1"),
      (#"{"brazeId":"b1"}"#, .brazeId("b1"), #"{"braze_id":"b1"}"#, "b:b1"),
      (
        #"{"alias":{"name":"n","label":"l"}}"#, .alias(name: "n", label: "l"),
        #"{"user_alias":{"alias_name":"n","alias_label":"l"}}"#, "a:n:l"
      ),
      (
        #"{"alias":{"label":"l","name":"n"}}"#, .alias(name: "n", label: "l"),
        #"{"user_alias":{"alias_name":"n","alias_label":"l"}}"#, "a:n:l"
      ),
      (#"{"email":"a@b.co"}"#, .email("a@b.co"), #"{"email":"a@b.co"}"#, "e:a@b.co"),
      (#"{"phone":"+15550100"}"#, .phone("+15550100"), #"{"phone":"+15550100"}"#, "p:+15550100"),
    ])
  func variants(wire: String, expected: UserIdentifier, track: String, key: String) {
    var issues = Issues()
    let id = UserIdentifier.parse(F.json(wire), path: "user", issues: &issues)
    #expect(issues.errors.isEmpty)
    #expect(id == expected)
    #expect(JSONValue.object(expected.trackMembers).jsonText == track)
    #expect(expected.key == key)
    // The wire form parses back to the same identifier.
    var again = Issues()
    #expect(UserIdentifier.parse(expected.json, path: "user", issues: &again) == expected)
  }

  @Test("the wire form is exact")
  func wireForm() {
    #expect(UserIdentifier.externalId("u1").json.jsonText == #"{"externalId":"u1"}"#)
    #expect(UserIdentifier.alias(name: "n", label: "l").json.jsonText == #"{"alias":{"name":"n","label":"l"}}"#)
  }

  @Test(
    "problems are reported with paths and codes",
    arguments: [
      (#""u1""#, ["wrong_type@user"]),
      ("{}", ["missing@user"]),
      (#"{"externalId":"u1","email":"a@b.co"}"#, ["ambiguous_identifier@user"]),
      (#"{"externalId":""}"#, ["empty@user.externalId"]),
      (#"{"brazeId":5}"#, ["wrong_type@user.brazeId"]),
      (#"{"userId":"u1"}"#, ["unknown_key@user.userId", "missing@user"]),
      (#"{"externalId":"u1","extra":1}"#, ["unknown_key@user.extra"]),
      (#"{"alias":"n"}"#, ["wrong_type@user.alias"]),
      (#"{"alias":{"name":"n"}}"#, ["missing@user.alias.label"]),
      (#"{"alias":{"name":"","label":7}}"#, ["empty@user.alias.name", "wrong_type@user.alias.label"]),
      (#"{"alias":{"name":"n","label":"l","x":1}}"#, ["unknown_key@user.alias.x"]),
      (#"{"phone":null}"#, ["wrong_type@user.phone"]),
    ])
  func problems(wire: String, expected: [String]) {
    var issues = Issues()
    #expect(UserIdentifier.parse(F.json(wire), path: "user", issues: &issues) == nil)
    #expect(issues.errorList == expected)
  }

  @Test("the path prefix is the caller's")
  func pathPrefix() {
    var issues = Issues()
    _ = UserIdentifier.parse(F.json(#"{"alias":{"name":"n"}}"#), path: "defaultUser", issues: &issues)
    #expect(issues.errorList == ["missing@defaultUser.alias.label"])
  }

  @Test("keys tell apart identifiers that concatenate alike")
  func keysInjective() {
    let ids: [UserIdentifier] = [
      .alias(name: "ab", label: "c"), .alias(name: "a", label: "bc"), .alias(name: "a\u{0}", label: "b"),
      .alias(name: "a", label: "\u{0}b"), .externalId("u1"), .brazeId("u1"), .email("u1"), .phone("u1"),
      .alias(name: "1:u", label: "1"), .externalId("a:1:u1"),
    ]
    #expect(Set(ids.map(\.key)).count == ids.count)
  }
}
