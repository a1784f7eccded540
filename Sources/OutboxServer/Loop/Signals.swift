import OutboxSupport
import Synchronization

/// The write end of the self-pipe that the stopping signals wake the run loop through.
private let signalPipeWriteEnd = Atomic<Int32>(-1)

/// Signal policy of the process:
///
/// - SIGTERM, SIGINT, SIGHUP and SIGQUIT stop it the same way: a byte on a self-pipe wakes the
///   run loop (or an output wait), which flushes, takes the final snapshot and exits 0. SIGHUP means
///   the terminal or parent went away; SIGQUIT would otherwise print the runtime's backtrace and
///   keep serving.
/// - SIGUSR1 and SIGUSR2 are ignored: they carry no meaning here, and their default action would
///   kill the process without its final snapshot.
/// - SIGPIPE and SIGXFSZ are ignored, so a closed stdout or a file-size limit shows up as an error
///   from `write` (EPIPE, EFBIG), which the callers handle.
package enum Signals {
  /// The signals that end the process like SIGTERM.
  static let stopping: [Int32] = [SIGTERM, SIGINT, SIGHUP, SIGQUIT]
  /// The signals whose default action is replaced by "ignore".
  static let ignored: [Int32] = [SIGPIPE, SIGXFSZ, SIGUSR1, SIGUSR2]

  /// Installs the handlers and returns the read end of the pipe to poll.
  package static func install() -> Int32 {
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { return -1 }
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)  // our own pipe, never inherited
    signalPipeWriteEnd.store(fds[1], ordering: .sequentiallyConsistent)
    for sig in ignored { signal(sig, SIG_IGN) }
    for sig in stopping { handle(sig) }
    // A parent may spawn us with these blocked (posix_spawn passes its thread's mask on).
    var unblock = sigset_t()
    sigemptyset(&unblock)
    for sig in stopping { sigaddset(&unblock, sig) }
    pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    return fds[0]
  }

  /// Routes `sig` to the self-pipe. No SA_RESTART: a blocking system call returns EINTR.
  private static func handle(_ sig: Int32) {
    var action = sigaction()
    #if canImport(Darwin)
    action.__sigaction_u.__sa_handler = onSignal
    #else
    action.__sigaction_handler.sa_handler = onSignal
    #endif
    sigemptyset(&action.sa_mask)
    action.sa_flags = 0
    sigaction(sig, &action, nil)
  }
}

private func onSignal(_ signal: Int32) {
  StopRequest.request()
  let fd = signalPipeWriteEnd.load(ordering: .relaxed)
  guard fd >= 0 else { return }
  let saved = errno
  var byte = UInt8(truncatingIfNeeded: signal)
  _ = write(fd, &byte, 1)
  errno = saved
}
