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

/// Saves write the item once, from the request's tape: what is stored must be exactly the compact
/// JSON of what was sent (canonical input copied as it is, anything else re-encoded), whatever the
/// spelling of the input.
@Suite struct StoredBytesTests {
  static let properties = [
    #"{}"#, #"{"campaign":"spring","step":3,"ok":true,"tags":["a","b"],"price":12.5}"#,
    #"{ "x" : 1 , "y" : [ 1 , 2 ] }"#, #"{"x":{"y":1}}"#, #"{"x":-0,"y":1e999,"z":123456789012345678901234567890}"#,
    #"{"x":"\u00e9"}"#, "{\"x\":\"\u{e9}\"}", "{\"x\":\"\u{2028}\"}", #"{"x":"a\/b\"c\n"}"#, #"{"\u0078":1}"#,
    #"{"x":"2026-01-02T03:04:05Z"}"#, #"{"K":1,"\u212a":2}"#,
  ]

  static let users = [
    #"{"externalId":"u1"}"#, #"{ "brazeId" : "b" }"#, #"{"alias":{"name":"n","label":"l"}}"#,
    #"{"alias":{"label":"l","name":"n"}}"#, #"{"email":"a\u0040b.co"}"#, #"{"phone":"+15550100"}"#,
  ]

  /// The stored item's members, as compact text, for one save.
  func stored(_ params: String) throws -> JSONValue {
    let server = InProcessServer()
    let reply = try server.request("saveCustomEvent", params)
    #expect(reply["result"] != nil, "\(params): \(reply)")
    let item = try #require(server.service.store.items.firstSeq.flatMap { server.service.store.items.item(seq: $0) })
    var out: [UInt8] = []
    item.encodeJSON(into: &out)
    #expect(out.isEmpty == false)
    return try JSONReader.parse(out)
  }

  @Test(arguments: properties)
  func propertiesAreStoredAsTheirCompactJSON(text: String) throws {
    let item = try stored(#"{"name":"e","properties":\#(text)}"#)
    let sent = try JSONReader.parse(text)
    #expect(item["properties"]?.jsonBytes == sent.jsonBytes)
    #expect(item["properties"] == sent)
  }

  @Test(arguments: users)
  func usersAreStoredInTheirWireForm(text: String) throws {
    let item = try stored(#"{"name":"e","user":\#(text)}"#)
    var issues = Issues()
    let user = try #require(UserIdentifier.parse(try JSONReader.parse(text), path: "user", issues: &issues))
    #expect(item["user"]?.jsonText == user.json.jsonText)
  }

  @Test func bodyBytesAreExactlyWhatTheGeneralWriterWrites() throws {
    let params = #"{"name":"n\u00e9","properties":{"a":[1,"x"]},"user":{"alias":{"label":"l","name":"n"}}}"#
    let server = InProcessServer()
    #expect(try server.request("saveCustomEvent", params)["result"] != nil)
    let body = try #require(
      server.service.store.items.firstSeq.flatMap { server.service.store.items.item(seq: $0) }?.body)
    let expected =
      #","user":{"alias":{"name":"n","label":"l"}},"name":"né","properties":{"a":[1,"x"]},"time":"2026-01-01T00:00:00.000Z""#
    #expect(String(decoding: body, as: UTF8.self) == expected)
  }
}
