#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A fresh 0700 directory under $TMPDIR (or /tmp), removed with everything in it, unless
/// `PUSH_OUTBOX_FUZZ_KEEP=1` keeps it (its path is printed), to look at when reproducing a crash.
package struct TempDirectory {
  package let path: String

  package init() {
    let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
    var template = Array((base + "/push-outbox-fuzz-XXXXXX").utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
      fatalError("mkdtemp failed in \(base)")
    }
    path = String(cString: made)
  }

  /// The same directory for every input of this process, emptied here (one mkdtemp per process
  /// instead of a mkdtemp and a removal per input); `release()` empties it again after the input.
  /// With `PUSH_OUTBOX_FUZZ_KEEP=1`, a fresh directory per input, kept as with `init()`.
  package static func reused() -> TempDirectory {
    if getenv("PUSH_OUTBOX_FUZZ_KEEP") != nil { return TempDirectory() }
    let directory = shared
    directory.empty()
    return directory
  }

  /// Made at the first input, removed with its contents when the process exits normally (libFuzzer
  /// ends a campaign with `exit`); a crash leaves it, as it leaves a per-input directory.
  nonisolated(unsafe) private static let shared: TempDirectory = {
    let directory = TempDirectory()
    sharedPath = directory.path
    atexit { if let path = TempDirectory.sharedPath { TempDirectory.removeTree(path) } }
    return directory
  }()
  nonisolated(unsafe) private static var sharedPath: String? = nil

  /// After an input: the reused directory is emptied, a kept one stays.
  package func release() {
    if getenv("PUSH_OUTBOX_FUZZ_KEEP") != nil { return remove() }
    empty()
  }

  /// Removes everything inside the directory, keeping the directory itself.
  package func empty() {
    for name in Self.entries(path) { Self.removeTree(path + "/" + name) }
  }

  package func remove() {
    if getenv("PUSH_OUTBOX_FUZZ_KEEP") != nil {
      let note = Array("kept \(path)\n".utf8)
      _ = note.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
      return
    }
    Self.removeTree(path)
  }

  private static func removeTree(_ path: String) {
    if unlink(path) == 0 { return }
    for name in entries(path) { removeTree(path + "/" + name) }
    rmdir(path)
  }

  private static func entries(_ path: String) -> [String] {
    guard let dir = opendir(path) else { return [] }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names
  }
}
