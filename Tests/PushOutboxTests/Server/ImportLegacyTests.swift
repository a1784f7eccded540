import Foundation
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

/// `importLegacy`: the guide's App Group lists, checked by the save methods' own rules.
@Suite struct ImportLegacyTests {
  private func importing(_ server: InProcessServer, _ params: String, id: Int = 1) throws -> JSONValue {
    try server.request("importLegacy", params.split(separator: "\n").joined(), id: id)
  }

  /// The items a drain hands out, without the envelope.
  private func flushedItems(_ server: InProcessServer) throws -> [JSONValue] {
    try server.request("flushPending", "{}", id: 999).at("result.items")?.arrayValue ?? []
  }

  private func codes(_ outcome: JSONValue?) -> [String] {
    (outcome?.at("error.data.errors")?.arrayValue ?? []).compactMap { $0["code"]?.stringValue }
  }

  @Test func eachShapeTheGuideWritesIsSaved() throws {
    let server = InProcessServer()
    let reply = try importing(
      server,
      #"""
      {"pending_custom_events":[{"event_name":"won","score":3,"properties":{"a":1}},{"Event Name":"stamp"}],
       "pending_custom_attributes":[{"drink":"latte"},{"tags":["a","b"],"visits":2}],
       "pending_user_attributes":[{"email":"ann@example.com"}]}
      """#)
    #expect(reply.at("result.saved") == .int(5))
    #expect(reply.at("result.failed") == .int(0))
    let results = reply.at("result.results")?.arrayValue ?? []
    #expect(results.map { $0["ids"]?.arrayValue?.count ?? 0 } == [1, 1, 1, 2, 1])
    let items = try flushedItems(server)
    #expect(items.count == 6)
    #expect(items[0]["name"] == .string("won"))
    // Flat, as the guide's helper writes it: a key named `properties` is one property.
    #expect(items[0].at("properties.score") == .int(3))
    #expect(items[0].at("properties.properties.a") == .int(1))
    #expect(items[1]["name"] == .string("stamp"))
    #expect(items[3]["value"] == .array([.string("a"), .string("b")]))
    #expect(items[4]["key"] == .string("visits"))
    #expect(items[5]["field"] == .string("email"))
  }

  @Test func itemsAreWhatTheSaveMethodsStore() throws {
    let imported = InProcessServer()
    let saved = InProcessServer()
    _ = try importing(
      imported,
      #"""
      {"pending_custom_events":[{"event_name":"won","score":3,"nested":{"k":[1,2]}}],
       "pending_custom_attributes":[{"tags":["b","a","b"]}],
       "pending_user_attributes":[{"country":"fr"}]}
      """#)
    _ = try saved.request("saveCustomEvent", #"{"name":"won","properties":{"score":3,"nested":{"k":[1,2]}}}"#)
    _ = try saved.request("saveCustomAttribute", #"{"key":"tags","value":["b","a","b"]}"#, id: 2)
    _ = try saved.request("saveUserAttribute", #"{"field":"country","value":"fr"}"#, id: 3)
    let want = try flushedItems(saved)
    #expect(want.count == 3)
    #expect(try flushedItems(imported) == want)
  }

  @Test func errorsAreTheSaveMethodsErrors() throws {
    let pairs: [(list: String, element: String, method: String, params: String)] = [
      (
        "pending_custom_events", #"{"event_name":"ok","$tag":1}"#, "saveCustomEvent",
        #"{"name":"ok","properties":{"$tag":1}}"#
      ),
      ("pending_custom_events", #"{"event_name":""}"#, "saveCustomEvent", #"{"name":"","properties":{}}"#),
      ("pending_custom_events", #"{"event_name":7}"#, "saveCustomEvent", #"{"name":7,"properties":{}}"#),
      ("pending_custom_attributes", #"{"$add":1}"#, "saveCustomAttribute", #"{"key":"$add","value":1}"#),
      ("pending_user_attributes", #"{"email":"nope"}"#, "saveUserAttribute", #"{"field":"email","value":"nope"}"#),
      ("pending_user_attributes", #"{"shoe_size":"9"}"#, "saveUserAttribute", #"{"field":"shoe_size","value":"9"}"#),
    ]
    for pair in pairs {
      let server = InProcessServer()
      let reply = try importing(server, #"{"\#(pair.list)":[\#(pair.element)]}"#)
      let outcome = reply.at("result.results.0")
      let direct = try server.request(pair.method, pair.params, id: 2)
      #expect(outcome?["method"] == .string(pair.method))
      #expect(outcome?["error"] != nil)
      #expect(outcome?["error"] == direct["error"], "\(pair.element)")
    }
  }

  @Test func eachRejectionHasItsCode() throws {
    let cases: [(list: String, element: String, code: String)] = [
      ("pending_custom_events", #"{"score":3}"#, "missing"),
      ("pending_custom_events", #"{"event_name":"a","Event Name":"b"}"#, "ambiguous_event_name"),
      ("pending_custom_events", #""push_opened""#, "wrong_type"),
      ("pending_custom_attributes", #"{}"#, "empty"),
      ("pending_custom_attributes", #"["drink","latte"]"#, "wrong_type"),
      ("pending_custom_attributes", #"{"event_name":"opened","score":1}"#, "event_in_attributes"),
      ("pending_user_attributes", #"{"userField":"a@b.co","attributeType":0}"#, "ambiguous_attribute_type"),
      ("pending_user_attributes", #"{"$archiver":"NSKeyedArchiver","$objects":[]}"#, "keyed_archive"),
      ("pending_user_attributes", #"{"email":"a@b.co","first_name":"Ann"}"#, "one_field_expected"),
      ("pending_user_attributes", #"{}"#, "one_field_expected"),
      ("pending_user_attributes", #""YnBsaXN0MDA=""#, "wrong_type"),
    ]
    for item in cases {
      let server = InProcessServer()
      let reply = try importing(server, #"{"\#(item.list)":[\#(item.element)]}"#)
      #expect(reply.at("result.failed") == .int(1), "\(item.element)")
      #expect(codes(reply.at("result.results.0")) == [item.code], "\(item.element)")
      #expect(reply.at("result.results.0.ids") == nil)
      #expect(server.service.store.count == 0, "a rejected element stored nothing: \(item.element)")
    }
  }

  @Test func aMixedBatchSavesTheValidAndReportsTheRest() throws {
    let server = InProcessServer()
    let reply = try importing(
      server,
      #"""
      {"pending_custom_events":[{"event_name":"a"},{"nope":1},{"event_name":"b"}],
       "pending_custom_attributes":[{"ok":1,"$add":2},{"fine":true}],
       "pending_user_attributes":[{"email":"bad"},{"first_name":"Ann"}]}
      """#)
    let results = reply.at("result.results")?.arrayValue ?? []
    #expect(results.map { $0["list"]?.stringValue ?? "" }.count == 7)
    #expect(results.map { $0["index"] } == [0, 1, 2, 0, 1, 0, 1].map { JSONValue.int($0) })
    #expect(results.map { $0["error"] == nil } == [true, false, true, false, true, false, true])
    #expect(results[3]["key"] == .string("$add"))
    #expect(reply.at("result.saved") == .int(4))
    #expect(reply.at("result.failed") == .int(3))
    #expect(reply.at("result.pending") == .int(4))
    // The dictionary with one bad key stored neither key.
    let items = try flushedItems(server)
    #expect(items.compactMap { $0["name"]?.stringValue } == ["a", "b"])
    #expect(items.compactMap { $0["key"]?.stringValue } == ["fine"])
    #expect(items.compactMap { $0["field"]?.stringValue } == ["first_name"])
  }

  @Test func theCallAsAWhole() throws {
    let server = InProcessServer { $0.maxBatch = 3 }
    let empty = try importing(server, "{}")
    #expect(empty.at("result.results") == .array([]))
    #expect(empty.at("result.saved") == .int(0))
    let notArray = try importing(server, #"{"pending_user_attributes":{"email":"a@b.co"},"extra":1}"#)
    #expect(codes(notArray) == ["wrong_type", "unknown_param"])
    let tooMany = try importing(
      server,
      #"{"pending_custom_events":[{"event_name":"a"},{"event_name":"b"}],"pending_custom_attributes":[{"a":1},{"b":2}]}"#
    )
    #expect(codes(tooMany) == ["too_many_elements"])
    #expect(tooMany.at("error.data.errors.0.max") == .int(3))
    #expect(tooMany.at("error.data.errors.0.count") == .int(4))
    let badUser = try importing(server, #"{"pending_custom_events":[{"event_name":"a"}],"user":{"externalId":""}}"#)
    #expect(badUser.at("error.code") == .int(-32602))
    #expect(server.service.store.count == 0, "a refused call stores nothing")
  }

  @Test func aUserAppliesToEveryItem() throws {
    let server = InProcessServer()
    let reply = try importing(
      server,
      #"{"pending_custom_events":[{"event_name":"a"}],"pending_user_attributes":[{"email":"a@b.co"}],"user":{"externalId":"u1"}}"#
    )
    #expect(reply.at("result.saved") == .int(2))
    let items = try flushedItems(server)
    #expect(items.map { $0.at("user.externalId") } == [.string("u1"), .string("u1")])
    // The save method's own identifier rule: email cannot be set for a user identified by email.
    let conflict = try importing(server, #"{"pending_user_attributes":[{"email":"a@b.co"}],"user":{"email":"a@b.co"}}"#)
    #expect(codes(conflict.at("result.results.0")) == ["conflicting_identifier"])
  }

  @Test func importedItemsSurviveARestart() throws {
    let dir = Paths.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    func session(_ body: (InProcessServer) throws -> Void) throws {
      let server = InProcessServer {
        $0.memory = false
        $0.storePath = dir.path
        $0.snapshotInterval = 3600
      }
      try server.service.openDiskInTests()
      try body(server)
      server.service.disk?.finish(server.service.store, now: server.service.clock.now())
    }
    var ids: [JSONValue] = []
    try session { server in
      let reply = try importing(
        server, #"{"pending_custom_events":[{"event_name":"a"},{}],"pending_custom_attributes":[{"x":1,"y":2}]}"#)
      ids = (reply.at("result.results")?.arrayValue ?? []).flatMap { $0["ids"]?.arrayValue ?? [] }
      #expect(ids.count == 3)
      #expect(server.service.store.hasUncommitted == false, "the reply was rendered after the commit")
    }
    try session { server in
      let items = try flushedItems(server)
      #expect(items.compactMap { $0["id"] } == ids)
    }
  }

  @Test func theResultWaitsForTheCommitWithAJournal() throws {
    let dir = Paths.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let server = InProcessServer {
      $0.memory = false
      $0.storePath = dir.path
    }
    try server.service.openDiskInTests()
    defer { server.service.disk?.finish(server.service.store, now: server.service.clock.now()) }
    let line = #"{"pending_custom_events":[{"event_name":"a"}]}"#
    let bytes = Array(line.utf8)
    let result = try bytes.withUnsafeBufferPointer { buffer in
      let tape = try JSONTape(buffer)
      let list = try #require(tape.member(tape.root, "pending_custom_events"))
      let elements = tape.elements(list).enumerated().map {
        GuideStorage.Element(list: .customEvents, index: $0.offset, node: $0.element.value)
      }
      return ImportLegacy.run(tape, elements, user: nil, server.service)
    }
    #expect(result.saved == 1)
    #expect(result.awaitsCommit)
    #expect(server.service.store.hasUncommitted)
    #expect(server.service.store.commit() == nil)
    let none = try Array("[]".utf8).withUnsafeBufferPointer {
      ImportLegacy.run(try JSONTape($0), [], user: nil, server.service)
    }
    #expect(!none.awaitsCommit, "nothing saved, nothing to wait for")
  }
}

/// `push-outbox import`'s command line: FILE is the one argument that is not a flag or a flag's value.
@Suite struct ImportCommandLineTests {
  @Test func fileIsTheArgumentNoFlagTakes() throws {
    #expect(try ImportCommand.split(["--store", "dir", "group.json"]) == ("group.json", ["--store", "dir"]))
    #expect(try ImportCommand.split(["-", "--store=dir"]) == ("-", ["--store=dir"]))
    #expect(
      try ImportCommand.split(["--memory", "a.json", "--max-batch", "5"]) == (
        "a.json", ["--memory", "--max-batch", "5"]
      ))
    #expect(try ImportCommand.split(["--store", "dir"]) == (nil, ["--store", "dir"]))
    #expect(throws: UsageError("takes one FILE; got a.json and b.json")) {
      try ImportCommand.split(["a.json", "b.json"])
    }
  }
}
