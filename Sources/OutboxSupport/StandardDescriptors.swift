/// The standard descriptors as the process found them, and the guard that keeps files off them.
///
/// A process started with fd 0, 1 or 2 closed (`>&-`) would give that number to the first file or
/// pipe it opens: the store's LOCK would receive the items `flush` writes to "stdout", the signal
/// pipe would be read as stdin. So the executable calls `secure()` first thing, before it opens
/// anything, and each closed one becomes `/dev/null`. What was closed is kept so that a command
/// whose output is its data (`flush`, `--help`, the server's replies) can refuse to run.
package struct StandardDescriptors: Sendable, Equatable {
  /// The descriptors among 0, 1, 2 that were closed at start (now `/dev/null`), in order.
  package var closed: [Int32]

  package init(closed: [Int32]) { self.closed = closed }

  /// True when stdout was closed at start: whatever is written there now goes to `/dev/null`.
  var stdoutWasClosed: Bool { closed.contains(1) }

  /// Opens `/dev/null` (read-write) on each closed descriptor of `fds`, in order. Returns what was
  /// closed, or the descriptor and errno of an open that failed (that descriptor stays closed).
  static func reopenClosed(_ fds: [Int32] = [0, 1, 2]) -> Result<Self, FileError> {
    var closed: [Int32] = []
    for fd in fds where !isOpen(fd) {
      let opened = open("/dev/null", O_RDWR)
      guard opened >= 0 else { return .failure(FileError(operation: "open", path: "/dev/null", code: errno)) }
      if opened != fd {  // 0, 1, 2 in order land on their own number; others are moved there
        let moved = dup2(opened, fd)
        let code = errno
        close(opened)
        guard moved == fd else { return .failure(FileError(operation: "dup2", path: "/dev/null", code: code)) }
      }
      closed.append(fd)
    }
    return .success(StandardDescriptors(closed: closed))
  }

  /// `reopenClosed()` for the executable: on failure, says why on stderr (if it can) and exits 1,
  /// since anything the process opened next could land on a standard descriptor.
  package static func secure() -> StandardDescriptors {
    switch reopenClosed() {
    case .success(let found): return found
    case .failure(let error):
      Log.stderr("push-outbox: a standard descriptor is closed and \(error) failed; not starting")
      exit(1)
    }
  }

  /// True when `fd` is an open descriptor.
  package static func isOpen(_ fd: Int32) -> Bool {
    fcntl(fd, F_GETFD) != -1 || errno != EBADF
  }

  /// The usage error for a command whose `output` (e.g. "the flushed items") is written to stdout,
  /// when stdout was closed at start; nil when stdout was open.
  /// True when stdin is a directory (`< DIR`): reading it fails at once, which looked like an empty
  /// input and a silent exit 0.
  package static var stdinIsDirectory: Bool {
    var info = stat()
    return fstat(0, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
  }

  package func closedStdoutRefusal(_ output: String) -> String? {
    guard stdoutWasClosed else { return nil }
    return "stdout is closed, but \(output) would go there; nothing was done"
      + " (to discard it on purpose, redirect stdout to /dev/null)"
  }
}
