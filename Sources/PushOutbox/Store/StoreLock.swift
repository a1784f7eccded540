/// One writer per store: an exclusive `flock` on `<store>/LOCK`, held for the whole run.
///
/// The file holds the owner's pid, so a second process can say who has the store. The lock is
/// released by the kernel when the process ends, however it ends.
package struct StoreLock: ~Copyable {
  private let fd: Int32

  /// Takes the lock without waiting, or throws a startup error naming the holder (exit code 3).
  package init(directory: String) throws(StartupError) {
    let path = directory + "/LOCK"
    let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard fd >= 0 else {
      throw StartupError(message: "cannot open \(path): \(errnoText(errno))", exitCode: 1)
    }
    if flock(fd, LOCK_EX | LOCK_NB) != 0 {
      let holder = (try? FileIO.read(path)).flatMap { String(decoding: $0 ?? [], as: UTF8.self) } ?? ""
      close(fd)
      let pid = holder.trimmingWhitespace.isEmpty ? "unknown" : holder.trimmingWhitespace
      throw StartupError(
        message: "the store \(directory) is in use by another push-outbox (pid \(pid))", exitCode: 3,
        rpcError: .app(.storeLocked, "store_locked", "Store locked", [JSONMember("pid", .string(pid))]))
    }
    _ = ftruncate(fd, 0)
    let pid = Array(String(getpid()).utf8)
    _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    self.fd = fd
  }

  deinit { close(fd) }
}

extension String {
  fileprivate var trimmingWhitespace: String {
    String(String.UnicodeScalarView(unicodeScalars.filter { $0 != " " && $0 != "\n" }))
  }
}
