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

/// The start-up guard on descriptors the test picks (far above what the runner uses), and the
/// refusal decision. The real 0, 1, 2 are covered over the binary in Tests/fault/test_closed_descriptors.py.
@Suite struct StandardDescriptorsTests {
  /// Two descriptor numbers no one else in the test process uses, both closed.
  private static func closedPair() -> (Int32, Int32) {
    let base = Int32(700 + Int.random(in: 0..<100) * 2)
    close(base)
    close(base + 1)
    return (base, base + 1)
  }

  private static func isDevNull(_ fd: Int32) -> Bool {
    var info = stat()
    var null = stat()
    guard fstat(fd, &info) == 0, stat("/dev/null", &null) == 0 else { return false }
    return info.st_dev == null.st_dev && info.st_ino == null.st_ino
  }

  @Test func closedDescriptorsBecomeDevNullAndAreRecorded() throws {
    let (open1, closed1) = Self.closedPair()
    let pipeFDs = UnsafeMutablePointer<Int32>.allocate(capacity: 2)
    defer { pipeFDs.deallocate() }
    #expect(pipe(pipeFDs) == 0)
    #expect(dup2(pipeFDs[0], open1) == open1)
    defer { close(open1); close(closed1); close(pipeFDs[0]); close(pipeFDs[1]) }
    #expect(!StandardDescriptors.isOpen(closed1))

    let found = try StandardDescriptors.reopenClosed([open1, closed1]).get()
    #expect(found.closed == [closed1])
    #expect(Self.isDevNull(closed1))
    #expect(!Self.isDevNull(open1))  // an open one is left alone
    var byte: UInt8 = 0
    #expect(read(closed1, &byte, 1) == 0)  // reads: end of input
    #expect(write(closed1, &byte, 1) == 1)  // writes: gone
  }

  @Test func nothingClosedChangesNothing() throws {
    let found = try StandardDescriptors.reopenClosed([]).get()
    #expect(found.closed.isEmpty && !found.stdoutWasClosed)
  }

  @Test func onlyAClosedStdoutRefusesACommandWhoseOutputIsItsData() {
    for closed in [[], [0], [2], [0, 2]] as [[Int32]] {
      #expect(StandardDescriptors(closed: closed).closedStdoutRefusal("the flushed items") == nil)
    }
    for closed in [[1], [0, 1], [1, 2], [0, 1, 2]] as [[Int32]] {
      let refusal = StandardDescriptors(closed: closed).closedStdoutRefusal("the flushed items")
      #expect(refusal?.hasPrefix("stdout is closed, but the flushed items would go there; nothing was done") == true)
    }
  }
}
