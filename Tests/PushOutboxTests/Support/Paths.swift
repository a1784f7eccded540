import Foundation

/// Locations the tests need: the repository, its test data, and the built binary.
enum Paths {
  /// The repository root, found from this file's path.
  static let root: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

  /// `Tests/data` in the repository: every data file a test reads is there (nothing outside the clone).
  static let testData = root.appendingPathComponent("Tests/data")

  /// A test data directory that must exist: a missing one throws `MissingTestData`, naming its path,
  /// so a test that needs it fails (it is never skipped).
  static func requiredDirectory(_ url: URL) throws -> URL {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else {
      throw MissingTestData(path: url.path)
    }
    return url
  }

  static let transcripts = root.appendingPathComponent("Protocol/transcripts")

  /// The `push-outbox` binary built next to the test bundle (`swift build` builds it first).
  static let binary: String = {
    if let explicit = ProcessInfo.processInfo.environment["PUSH_OUTBOX_BIN"] { return explicit }
    var candidates: [String] = []
    if let exe = Bundle.main.executablePath {
      candidates.append(
        URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("push-outbox").path)
    }
    let selfExe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
    if !selfExe.isEmpty {
      candidates.append(
        URL(fileURLWithPath: selfExe).deletingLastPathComponent().appendingPathComponent("push-outbox").path)
    }
    candidates.append(root.appendingPathComponent(".build/debug/push-outbox").path)
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates.last!
  }()

  /// A new empty directory under the system temp directory, removed when the test process exits.
  static func temporaryDirectory() -> URL {
    let url = sessionDirectory.appendingPathComponent(UUID().uuidString)
    try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
  }

  /// The one directory (per test process) that holds every `temporaryDirectory()`: made at the
  /// first call, removed with everything in it at exit, so a test run leaves nothing in $TMPDIR.
  /// (Set PUSH_OUTBOX_TESTS_KEEP=1 to keep it, to look at a failing test's store.)
  private static let sessionDirectory: URL = {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent(
      "push-outbox-tests-\(getpid())-\(UUID().uuidString)")
    try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    atexit { Paths.removeSessionDirectory() }
    return url
  }()

  private static func removeSessionDirectory() {
    let path = sessionDirectory.path
    if ProcessInfo.processInfo.environment["PUSH_OUTBOX_TESTS_KEEP"] != nil {
      FileHandle.standardError.write(Data("kept \(path)\n".utf8))
      return
    }
    try? FileManager.default.removeItem(atPath: path)
  }
}

/// A test data file or directory that is not where the repository keeps it.
struct MissingTestData: Error, CustomStringConvertible {
  let path: String
  var description: String {
    "test data missing: \(path) (the repository carries it under Tests/data; is the clone complete?)"
  }
}
