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
    guard let dir = opendir(path) else { return }
    var names: [String] = []
    while let entry = readdir(dir) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
      }
      if name != "." && name != ".." { names.append(name) }
    }
    closedir(dir)
    for name in names { removeTree(path + "/" + name) }
    rmdir(path)
  }
}
