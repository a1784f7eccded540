import Testing

@testable import OutboxSupport

/// Which kernels the journal's pass trusts with one `syncfs` for many files: those that report a
/// failed write-back through it (Linux 5.8 or later). The pass itself is exercised over the real
/// binary (Tests/fault/test_fsync_cadence.py).
@Suite struct JournalFlushTests {
  #if os(Linux)
  @Test(arguments: [
    ("6.18.44-fc-v657", true), ("5.8.0", true), ("5.10.0-28-amd64", true), ("10.0", true),
    ("5.7.19", false), ("4.18.0-513.el8.x86_64", false), ("3.10.0", false), ("5", false), ("", false), ("linux", false),
  ])
  func syncfsIsTrustedFromLinux58(release: String, trusted: Bool) {
    #expect(FileIO.kernelReportsSyncfsFailures(release: release) == trusted)
  }
  #endif
}
