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

/// Leases, acks, releases, expiry and the `/users/track` output.
@Suite struct FlushTests {
  func save(_ server: InProcessServer, _ name: String, user: String? = nil, id: Int = 1) throws {
    let userPart = user.map { #","user":{"externalId":"\#($0)"}"# } ?? ""
    let reply = try server.request("saveCustomEvent", #"{"name":"\#(name)"\#(userPart)}"#, id: id)
    #expect(reply["result"] != nil)
  }

  func names(_ reply: JSONValue) -> [String] {
    reply.at("result.items")?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
  }

  @Test func itemsSavedDuringALeaseSurviveTheAck() throws {
    let server = InProcessServer()
    try save(server, "before")
    let lease = try server.request("flushPending", #"{"leaseMs":60000}"#)
    let flushId = try #require(lease.at("result.flushId")?.stringValue)
    try save(server, "during")
    let repeated = try server.request("flushPending", #"{"leaseMs":60000}"#)
    #expect(repeated.at("result.flushId") == .string(flushId))
    #expect(names(repeated) == ["before"])
    #expect(try server.request("ackFlush", #"{"flushId":"\#(flushId)"}"#).at("result.acked") == .int(1))
    #expect(try server.request("ackFlush", #"{"flushId":"\#(flushId)"}"#).at("result.acked") == .int(0))
    #expect(names(try server.request("flushPending")) == ["during"])
  }

  @Test func anEmptyLeaseDoesNotBlockTheNextOne() throws {
    let server = InProcessServer()
    let empty = try server.request("flushPending", #"{"leaseMs":60000}"#)
    #expect(empty.at("result.items") == .array([]))
    #expect(empty.at("result.leaseExpiresAt") == nil)
    try save(server, "later")
    #expect(names(try server.request("flushPending", #"{"leaseMs":60000}"#)) == ["later"])
  }

  @Test func aRepeatKeepsTheShapeOfTheFirstCall() throws {
    let server = InProcessServer()
    try save(server, "anonymous")
    let first = try server.request("flushPending", #"{"leaseMs":60000}"#)
    let repeat_ = try server.request("flushPending", #"{"leaseMs":60000,"format":"usersTrack"}"#)
    #expect(repeat_.at("result.flushId") == first.at("result.flushId"))
    #expect(names(repeat_) == ["anonymous"])
    #expect(repeat_.at("result.requests") == nil)
  }

  @Test func releaseAndUnknownIds() throws {
    let server = InProcessServer()
    try save(server, "x")
    let flushId = try #require(
      try server.request("flushPending", #"{"leaseMs":60000}"#).at("result.flushId")?.stringValue)
    #expect(try server.request("releaseFlush", #"{"flushId":"\#(flushId)"}"#).at("result.released") == .int(1))
    #expect(try server.request("releaseFlush", #"{"flushId":"\#(flushId)"}"#).at("error.code") == .int(-32004))
    #expect(try server.request("ackFlush", #"{"flushId":"nope"}"#).at("error.code") == .int(-32004))
    let again = try server.request("flushPending")
    #expect(again.at("result.items.0.deliveryCount") == .int(1))
  }

  /// On the fixed clock the test moves itself: the lease holds until its last millisecond and ends at
  /// `expiresAt`, with no sleep.
  @Test func anExpiredLeaseReturnsItsItems() throws {
    let server = InProcessServer()
    let start = try #require(server.service.config.fixedClock)
    try save(server, "x")
    let flushId = try #require(
      try server.request("flushPending", #"{"leaseMs":1000}"#).at("result.flushId")?.stringValue)
    server.service.expireLeases(now: start + 999)
    #expect(server.service.store.leases.map(\.flushId) == [flushId])
    server.service.expireLeases(now: start + 1000)
    #expect(server.service.store.leases.isEmpty)
    #expect(try server.request("ackFlush", #"{"flushId":"\#(flushId)"}"#).at("error.code") == .int(-32004))
    let again = try server.request("flushPending")
    #expect(names(again) == ["x"])
    #expect(again.at("result.items.0.deliveryCount") == .int(1))
  }

  @Test func usersTrackSplitsBodiesAndCarriesIdentifiers() throws {
    let server = InProcessServer()
    for n in 0..<160 {
      let user = n % 2 == 0 ? #"{"externalId":"u1"}"# : #"{"alias":{"name":"a","label":"l"}}"#
      _ = try server.request("saveCustomAttribute", #"{"key":"k\#(n)","value":\#(n),"user":\#(user)}"#, id: n)
    }
    for n in 0..<10 { try save(server, "e\(n)", user: "u2", id: 200 + n) }
    try save(server, "anonymous", id: 300)
    let reply = try server.request("flushPending", #"{"format":"usersTrack"}"#)
    let bodies = try #require(reply.at("result.requests")?.arrayValue)
    #expect(bodies.count == 3)
    #expect(bodies.map { $0["attributes"]?.arrayValue?.count } == [75, 75, 10])
    #expect(bodies.map { $0["events"]?.arrayValue?.count } == [0, 0, 10])  // 75 combined, in seq order
    let objects = bodies.flatMap { ($0["attributes"]?.arrayValue ?? []) + ($0["events"]?.arrayValue ?? []) }
    let identifiers = ["external_id", "braze_id", "user_alias", "email", "phone"]
    #expect(objects.allSatisfy { object in object.objectValue?.filter { identifiers.contains($0.key) }.count == 1 })
    #expect(objects.first?["k0"] == .int(0))
    #expect(reply.at("result.skipped.0.reason") == .string("no_identifier"))
    #expect(server.service.store.count == 0)  // the anonymous event is a dead letter now
    #expect(server.service.store.items.deadCount == 1)
  }

  @Test(arguments: [(75, [75]), (76, [75, 1]), (150, [75, 75]), (151, [75, 75, 1])])
  func trackBatchLimitSplitsAtSeventyFive(count: Int, sizes: [Int]) throws {
    let server = InProcessServer()
    for n in 0..<count {
      _ = try server.request("saveCustomEvent", #"{"name":"e","properties":{"n":\#(n)},"user":{"brazeId":"b"}}"#, id: n)
    }
    let bodies = try server.request("flushPending", #"{"format":"usersTrack"}"#).at("result.requests")?.arrayValue ?? []
    #expect(bodies.map { $0["events"]?.arrayValue?.count ?? -1 } == sizes)
    #expect(bodies.last?["events"]?.arrayValue?.last?.at("properties.n") == .int(Int64(count - 1)))
  }

  /// Saves 60 events and 60 attributes for one user, interleaved, and returns the usersTrack bodies.
  func sixtyAndSixty(_ configure: @escaping (inout Configuration) -> Void = { _ in }) throws -> [JSONValue] {
    let server = InProcessServer(configure)
    for n in 0..<60 {
      _ = try server.request("saveCustomAttribute", #"{"key":"k","value":\#(n),"user":{"externalId":"u"}}"#, id: 2 * n)
      try save(server, "e\(n)", user: "u", id: 2 * n + 1)
    }
    return try server.request("flushPending", #"{"format":"usersTrack"}"#).at("result.requests")?.arrayValue ?? []
  }

  @Test func combinedLimitSplitsSixtyEventsAndSixtyAttributes() throws {
    let bodies = try sixtyAndSixty()
    let sizes = bodies.map { ($0["attributes"]?.arrayValue?.count ?? -1) + ($0["events"]?.arrayValue?.count ?? -1) }
    #expect(sizes == [75, 45])
    let attributes = bodies.flatMap { $0["attributes"]?.arrayValue ?? [] }
    #expect(attributes.map { $0["k"] } == (0..<60).map { .int(Int64($0)) })  // order kept across bodies
    let events = bodies.flatMap { $0["events"]?.arrayValue ?? [] }
    #expect(events.map { $0["name"]?.stringValue } == (0..<60).map { "e\($0)" })
    #expect(events.allSatisfy { $0["time"]?.stringValue == "2026-01-01T00:00:00.000Z" })  // the saved time
  }

  @Test func perArrayModeKeepsSeventyFivePerArray() throws {
    let bodies = try sixtyAndSixty { $0.trackBatchMode = .perArray }
    #expect(bodies.count == 1)
    #expect(bodies.first?["attributes"]?.arrayValue?.count == 60)
    #expect(bodies.first?["events"]?.arrayValue?.count == 60)
  }

  @Test func theBatchLimitCapsTheCombinedCount() throws {
    let bodies = try sixtyAndSixty { $0.trackBatchLimit = 50 }
    let sizes = bodies.map { ($0["attributes"]?.arrayValue?.count ?? 0) + ($0["events"]?.arrayValue?.count ?? 0) }
    #expect(sizes == [50, 50, 20])
  }

  @Test func laterUserAttributeSupersedesEarlier() throws {
    let server = InProcessServer()
    for (n, city) in ["Paris", "Lyon"].enumerated() {
      _ = try server.request(
        "saveUserAttribute", #"{"field":"home_city","value":"\#(city)","user":{"externalId":"u"}}"#, id: n)
    }
    let items = try server.request("flushPending", #"{"leaseMs":1000}"#).at("result.items")?.arrayValue ?? []
    #expect(items.map { $0["superseded"] } == [.bool(true), nil])
    let track = try server.request("flushPending", #"{"leaseMs":1000,"format":"usersTrack"}"#)
    #expect(track.at("result.requests") == nil)  // the repeat keeps the items shape
  }

  @Test func anIdentifierCannotAlsoBeTheFieldSet() throws {
    let reply = try InProcessServer().request(
      "saveUserAttribute", #"{"field":"email","value":"new@example.com","user":{"email":"old@example.com"}}"#)
    #expect(reply.at("error.data.errors.0.code") == .string("conflicting_identifier"))
  }
}
