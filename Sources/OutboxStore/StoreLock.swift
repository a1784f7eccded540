import OutboxSupport

/// One writer per store: an exclusive `flock` on `<store>/LOCK`, held for the whole run.
///
/// The file holds the owner's pid, so a second process can say who has the store. The lock is
/// released by the kernel when the process ends, however it ends. A symlink named LOCK is refused.
struct StoreLock: ~Copyable {
  private let fd: Int32

  /// Takes the lock without waiting, or throws a startup error naming the holder (exit code 3).
  package init(directory: String) throws(StartupError) {
    let path = directory + "/LOCK"
    let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
    guard fd >= 0 else {
      throw .refused("unsafe_store", "cannot open \(path): \(errnoText(errno))")
    }
    var info = stat()
    guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == geteuid() else {
      close(fd)
      throw .refused("unsafe_store", "refusing \(path): not a regular file owned by this user")
    }
    if flock(fd, LOCK_EX | LOCK_NB) != 0 {
      var holder = [UInt8](repeating: 0, count: 32)
      let n = holder.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
      close(fd)
      let text = String(decoding: holder.prefix(max(0, n)).filter { $0 >= 48 && $0 <= 57 }, as: UTF8.self)
      let pid = text.isEmpty ? "unknown" : text
      throw StartupError(.locked(pid: pid), "the store \(directory) is in use by another push-outbox (pid \(pid))")
    }
    _ = ftruncate(fd, 0)
    let pid = Array(String(getpid()).utf8)
    _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    self.fd = fd
  }

  deinit { close(fd) }
}
