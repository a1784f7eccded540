import Testing

@testable import OutboxStore
@testable import OutboxSupport

/// When the journal's pass flushes many files with one `syncfs`: on kernels that report a failed
/// write-back through it (Linux 5.8 or later), and only while the system holds little unwritten data
/// of other programs, which a `syncfs` would write out too. The pass itself is exercised over the
/// real binary (Tests/fault/test_fsync_cadence.py).
@Suite struct JournalFlushTests {
  #if os(Linux)
  @Test(arguments: [
    ("6.18.44-fc-v657", true), ("5.8.0", true), ("5.10.0-28-amd64", true), ("10.0", true),
    ("5.7.19", false), ("4.18.0-513.el8.x86_64", false), ("3.10.0", false), ("5", false), ("", false), ("linux", false),
  ])
  func syncfsIsTrustedFromLinux58(release: String, trusted: Bool) {
    #expect(FileIO.kernelReportsSyncfsFailures(release: release) == trusted)
  }

  @Test func theSystemsDirtyBytesAreRead() {
    #expect(FileIO.systemDirtyBytes() != nil)
  }
  #endif

  @Test(
    arguments: [
      ("MemTotal:       24576000 kB\nDirty:             36 kB\nWriteback:         0 kB\n", 36 * 1024),
      ("Dirty:            460056 kB", 460_056 * 1024),
      ("Dirty: 0 kB\n", 0),
      ("MemTotal: 1 kB\nWriteback: 5 kB\n", nil),
      ("Dirty: kB\n", nil),
      ("Dirty: -4 kB\n", nil),
      ("Dirty: 99999999999999999999 kB\n", nil),
      ("Dirty: 9223372036854775807 kB\n", nil),
      ("", nil),
    ] as [(String, Int?)])
  func dirtyBytesComeFromMeminfo(text: String, bytes: Int?) {
    #expect(FileIO.dirtyBytes(meminfo: text) == bytes)
  }

  @Test(
    arguments: [
      (2, 0, true), (40, Journal.syncfsDirtyLimit, true), (2, Journal.syncfsDirtyLimit + 1, false),
      (40, 460_056 * 1024, false), (1, 0, false), (2, nil, false),
    ] as [(Int, Int?, Bool)])
  func aPassUsesSyncfsForManyFilesWhileLittleElseIsUnwritten(files: Int, dirty: Int?, syncfs: Bool) {
    #expect(Journal.passUsesSyncfs(files: files, dirtyBytes: dirty) == syncfs)
  }
}
