import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The write end of the self-pipe that SIGTERM and SIGINT wake the run loop through.
private let signalPipeWriteEnd = Atomic<Int32>(-1)

/// Turns SIGTERM and SIGINT into a readable byte on a pipe, and ignores SIGPIPE
/// (a closed stdout then shows up as EPIPE from `write`, which the loop handles).
package enum Signals {
  /// Installs the handlers and returns the read end of the pipe to poll.
  package static func install() -> Int32 {
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { return -1 }
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)  // our own pipe, never inherited
    signalPipeWriteEnd.store(fds[1], ordering: .sequentiallyConsistent)
    signal(SIGPIPE, SIG_IGN)
    signal(SIGXFSZ, SIG_IGN)  // past a file-size limit, writes fail with EFBIG instead of killing us
    for sig in [SIGTERM, SIGINT] {
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
    // A parent may spawn us with these blocked (posix_spawn passes its thread's mask on).
    var unblock = sigset_t()
    sigemptyset(&unblock)
    sigaddset(&unblock, SIGTERM)
    sigaddset(&unblock, SIGINT)
    pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    return fds[0]
  }
}

private func onSignal(_ signal: Int32) {
  let fd = signalPipeWriteEnd.load(ordering: .relaxed)
  guard fd >= 0 else { return }
  var byte = UInt8(truncatingIfNeeded: signal)
  _ = write(fd, &byte, 1)
}
