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

/// JSON and Braze compare text by code points; Swift's `String ==` uses canonical equivalence
/// ("\u{C5}" == "A\u{30A}", "K" == the Kelvin sign U+212A). Every identity must be by bytes.
@Suite struct TextIdentityTests {
  /// JSON text for the precomposed Å and the decomposed A + ring, and K and the Kelvin sign.
  static let precomposed = #""\u00c5""#
  static let decomposed = #""A\u030a""#

  /// Found by FuzzPayload: 255 characters of which some take two UTF-8 bytes trapped the store,
  /// which keeps an id's length in one byte.
  @Test func anIdOver255UTF8BytesIsInvalidNotATrap() throws {
    let server = InProcessServer()
    let id = String(repeating: "i", count: 250) + String(repeating: "\u{E9}", count: 5)
    let refused = try server.request("saveCustomEvent", #"{"name":"c","id":"\#(id)"}"#)
    #expect(refused.at("error.code") == .int(-32602))
    #expect(refused.at("error.data.errors.0.code") == .string("invalid_id"))
    let fits = String(repeating: "\u{E9}", count: 127) + "i"
    let saved = try server.request("saveCustomEvent", #"{"name":"c","id":"\#(fits)"}"#)
    #expect(saved.at("result.seq") != nil)
  }

  @Test func readerKeepsCanonicallyEquivalentKeysApart() throws {
    for text in [#"{"K":1,"\u212a":2}"#, "{\(Self.precomposed):1,\(Self.decomposed):2}"] {
      let bytes = Array(text.utf8)
      try bytes.withUnsafeBufferPointer { buffer in
        var reader = JSONReader(buffer)
        _ = try reader.parseDocument()
        let sawDuplicate = reader.sawDuplicateKey
        #expect(!sawDuplicate, "\(text)")
      }
    }
  }

  @Test func readerFindsDuplicatesSpelledWithEscapes() throws {
    let small = Array(#"{"a":1,"\u0061":2}"#.utf8)
    let large = Array(("{" + (0..<40).map { "\"k\($0)\":0" }.joined(separator: ",") + #","\u006b7":1}"#).utf8)
    for bytes in [small, large] {
      try bytes.withUnsafeBufferPointer { buffer in
        var reader = JSONReader(buffer)
        _ = try reader.parseDocument()
        let sawDuplicate = reader.sawDuplicateKey
        #expect(sawDuplicate)
      }
    }
  }

  @Test func largeObjectsCompareKeysByCodePoints() throws {
    let members = (0..<40).map { "\"k\($0)\":0" } + [#""K":1"#, #""\u212a":2"#]
    let bytes = Array(("{" + members.joined(separator: ",") + "}").utf8)
    try bytes.withUnsafeBufferPointer { buffer in
      var reader = JSONReader(buffer)
      _ = try reader.parseDocument()
      let sawDuplicate = reader.sawDuplicateKey
      #expect(!sawDuplicate)
    }
  }

  @Test func valuesAndIdentifiersAreEqualOnlyWithTheSameCodePoints() {
    #expect(JSONValue.string("\u{C5}") != JSONValue.string("A\u{30A}"))
    #expect(Set([JSONValue.string("\u{C5}"), .string("A\u{30A}")]).count == 2)
    #expect(RequestID.string("K") != RequestID.string("\u{212A}"))
    let a = UserIdentifier.externalId("\u{C5}")
    let b = UserIdentifier.externalId("A\u{30A}")
    #expect(a != b)
    #expect(a.key != b.key)
    #expect(Set([a, b]).count == 2)
    #expect(UserIdentifier.alias(name: "a:b", label: "c") != .alias(name: "a", label: "b:c"))
    #expect(UserIdentifier.alias(name: "a:b", label: "c").key != UserIdentifier.alias(name: "a", label: "b:c").key)
  }

  @Test func propertiesWithKAndTheKelvinSignAreTwoProperties() throws {
    let server = InProcessServer()
    let reply = try server.request("saveCustomEvent", #"{"name":"e","properties":{"K":1,"\u212a":2}}"#)
    #expect(reply["result"] != nil, "\(reply)")
    let items = try server.request("flushPending").at("result.items")?.arrayValue ?? []
    #expect(items.first?["properties"]?.objectValue?.count == 2)
  }

  @Test func requestObjectDuplicatesAreByCodePoints() throws {
    let server = InProcessServer()
    let dup = try server.call(#"{"jsonrpc":"2.0","id":1,"\u0069d":2,"method":"status"}"#)
    #expect(dup.at("error.code") == .int(-32600))
    let distinct = try server.call(#"{"jsonrpc":"2.0","id":1,"method":"status","\u212a":1,"K":2}"#)
    #expect(distinct["result"] != nil)
  }

  @Test func twoUsersWhoseIdsAreCanonicallyEquivalentStayTwoUsers() throws {
    let server = InProcessServer()
    for (n, id) in [Self.precomposed, Self.decomposed].enumerated() {
      let params = #"{"field":"first_name","value":"V\#(n)","user":{"externalId":\#(id)}}"#
      #expect(try server.request("saveUserAttribute", params, id: n)["result"] != nil)
    }
    let reply = try server.request("flushPending", #"{"format":"usersTrack"}"#)
    let attributes = reply.at("result.requests")?.arrayValue?.first?["attributes"]?.arrayValue ?? []
    #expect(attributes.count == 2)
    #expect(Set(attributes.compactMap { $0["first_name"]?.stringValue }) == ["V0", "V1"])
  }

  @Test func arraysKeepCanonicallyEquivalentElements() throws {
    let server = InProcessServer()
    let params = #"{"key":"tags","op":"add","value":[\#(Self.precomposed),\#(Self.decomposed)]}"#
    let reply = try server.request("saveCustomAttribute", params)
    #expect(reply.at("result.warnings") == nil, "\(reply)")
  }

  @Test func namesFromTablesMatchOnlyTheirOwnBytes() throws {
    let server = InProcessServer()
    let country = try server.request(
      "saveUserAttribute", #"{"field":"country","value":"\u212ae","user":{"externalId":"u"}}"#)
    #expect(country.at("error.data.errors.0.code") == .string("invalid_country"))
    let op = try server.request("saveCustomAttribute", #"{"key":"k","op":"\u212a","value":1}"#)
    #expect(op.at("error.code") == .int(-32602))
  }
}
