import Foundation
import Testing

@testable import OutboxStore
@testable import OutboxSupport

/// `--fsync everysec` on the clock the journal is given: a commit's records are flushed once a
/// second has passed on that clock, not before, and the wait it reports follows it (no sleep here).
@Suite struct JournalClockTests {
  @Test func everysecFlushesOnceASecondOfItsClockHasPassed() throws {
    let time = HeldClock()
    let journal = Journal(
      directory: Paths.temporaryDirectory().path, policy: .everysec, segments: [], monotonic: time.clock)
    defer { journal.close() }
    let body = Array(#","name":"e""#.utf8)
    body.withUnsafeBytes {
      journal.appendItem(seq: 1, savedAt: 0, kind: .customEvent, hasUser: false, id: ItemID(high: 1, low: 2), body: $0)
    }
    try journal.commit()
    #expect(journal.msUntilSync == 1001)
    time.advance(0.6)
    #expect((400...401).contains(journal.msUntilSync))
    #expect(journal.tick() == nil)
    #expect((400...401).contains(journal.msUntilSync), "nothing flushed before the second is up")
    time.advance(0.4)
    #expect(journal.tick() == nil)
    #expect(journal.msUntilSync == -1, "flushed: nothing waits")
  }
}
