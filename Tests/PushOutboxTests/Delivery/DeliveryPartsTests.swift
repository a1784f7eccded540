import Testing

@testable import OutboxDelivery
@testable import OutboxDomain
@testable import OutboxJSON
@testable import OutboxServer
@testable import OutboxStore
@testable import OutboxSupport

/// The delivery core's parts on their own: the picking queue, the throttle, and the one pick and
/// batch rule it shares with `flushPending`.
@Suite struct DeliveryPartsTests {
  /// Saves events; `users[n]` nil saves one with no identifier.
  func server(_ users: [String?], limit: Int = 75) throws -> InProcessServer {
    let server = InProcessServer { $0.trackBatchLimit = limit }
    for (n, user) in users.enumerated() {
      let userPart = user.map { #","user":{"externalId":"\#($0)"}"# } ?? ""
      let reply = try server.request("saveCustomEvent", #"{"name":"e\#(n)"\#(userPart)}"#, id: n)
      #expect(reply.at("result.seq") != nil)
    }
    return server
  }

  func queue(_ server: InProcessServer, limit: Int = 75, mode: TrackBatchMode = .combined) -> PickingQueue {
    PickingQueue(store: server.service.store, batchLimit: limit, mode: mode)
  }

  @Test func theQueueSkipsBusyUsersAndDeadLettersItemsWithNoIdentifier() throws {
    let server = try server(["a", nil, "b", "a"])
    let queue = queue(server)
    let first = try #require(queue.next(maxObjects: 2))
    #expect(first.seqs == [1, 3])
    #expect(queue.noIdentifierCount == 1)
    #expect(server.service.store.items.isDead(seq: 2))
    queue.hold(first.users)  // a's and b's request is in flight: a's later item waits for it
    #expect(queue.next(maxObjects: 10) == nil)
    queue.free(first.users)
    queue.answered()
    #expect(queue.next(maxObjects: 10)?.seqs == [1, 3, 4])
  }

  @Test func aSplitGoesFirstOnceItsUsersAreFree() throws {
    let server = try server(["a", "b", "c"])
    let queue = queue(server)
    let a = try #require(queue.user(seq: 1))
    queue.split([1, 2])
    queue.hold([a])
    #expect(queue.next(maxObjects: 10)?.seqs == [3])  // the split waits for a; only c may go
    queue.free([a])
    #expect(queue.next(maxObjects: 10)?.seqs == [1])
    #expect(queue.next(maxObjects: 10)?.seqs == [2])
    #expect(queue.next(maxObjects: 10)?.seqs == [1, 2, 3])
  }

  @Test func theQueueCutsByTheBatchMode() throws {
    let server = try server(["a", "b", "c", "d"])
    #expect(queue(server, limit: 3).next(maxObjects: .max)?.objects == 3)
    #expect(queue(server, limit: 2, mode: .perArray).next(maxObjects: .max)?.objects == 2)
    #expect(queue(server, limit: 3).next(maxObjects: 1)?.objects == 1)
  }

  @Test func theThrottleBacksOffDoublesHonoursRetryAfterAndStops() {
    var throttle = Throttle(backoffMs: 1_000, maxBackoffMs: 3_000, configErrorBackoffMs: 60_000)
    #expect(!throttle.isPaused(0))
    let first = throttle.fail(nowMs: 0, afterMs: nil)
    #expect(first > 0 && throttle.isPaused(first - 1) && !throttle.isPaused(first))
    let second = throttle.fail(nowMs: 0, afterMs: nil)
    #expect(second >= first && second <= 3_000)
    #expect(throttle.fail(nowMs: 0, afterMs: 10_000) == 10_000)  // Retry-After longer than the backoff
    #expect(throttle.failures == 3 && throttle.setbacks == 3)
    throttle.delivered()
    #expect(throttle.failures == 0)
    #expect(throttle.stop(nowMs: 5) == 60_005)
    #expect(throttle.setbacks == 4 && throttle.failures == 0)
  }

  @Test func flushPendingAndDeliveryPickTheSameItems() throws {
    let users: [String?] = ["a", nil, "b", "a", nil, "c", "d"]
    let flushing = try server(users, limit: 3)
    let delivering = try server(users, limit: 3)
    let flushed = FlushPending.peek(max: .max, Shape(usersTrack: true), flushing.service)
    let cut = try #require(queue(delivering, limit: .max).next(maxObjects: .max))
    #expect(flushed.seqs == cut.seqs)
    #expect(flushed.skipped.count == 2)
    #expect(delivering.service.store.items.deadCount == 2)
    // The same cutting rule: delivery's first request is flushPending's first body.
    let first = try #require(queue(try server(users, limit: 3), limit: 3).next(maxObjects: .max))
    #expect(flushed.requests?.first?.seqs == first.seqs)
    #expect(flushed.requests?.count == 2)
  }
}
