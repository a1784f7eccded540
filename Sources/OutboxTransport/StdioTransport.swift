import OutboxSupport

/// Blocking reads of stdin in 64 KiB chunks and chunked writes to stdout. Every wait, for input or
/// for room on stdout, also watches the signal pipe.
///
/// It never changes the descriptors' flags: if a parent handed over non-blocking pipes,
/// EAGAIN is met with `poll`, not with a busy loop.
package struct StdioTransport: Transport {
  package let input: Int32
  package let output: Int32
  private let wakeup: Int32
  private var chunk = [UInt8](repeating: 0, count: 1 << 16)

  package init(input: Int32 = 0, output: Int32 = 1, wakeup: Int32) {
    self.input = input
    self.output = output
    self.wakeup = wakeup
    Self.widenPipe(input)
    Self.widenPipe(output)
  }

  /// The pipe size asked for stdin and stdout when they are pipes: Linux's default cap for an
  /// unprivileged process (`/proc/sys/fs/pipe-max-size`). With the default 64 KiB, a pipeline that
  /// reads our replies in large reads made both sides wait on each other every 64 KiB.
  static let pipeBytes: Int32 = 1 << 20

  /// Asks for a larger buffer on `fd` when it is a pipe of the kernel's default size (16 pages):
  /// a size someone chose is left as it is. Linux only; a refusal changes nothing.
  private static func widenPipe(_ fd: Int32) {
    #if os(Linux)
    var info = stat()
    guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFIFO else { return }
    let setSize: Int32 = 1031, getSize: Int32 = 1032  // F_SETPIPE_SZ, F_GETPIPE_SZ (<fcntl.h> with _GNU_SOURCE)
    let size = fcntl(fd, getSize)
    if size == 16 * Int32(getpagesize()), size < pipeBytes { _ = fcntl(fd, setSize, pipeBytes) }
    #endif
  }

  /// Waits up to `timeoutMs` (-1: forever) for input or a signal, then reads one chunk.
  package mutating func next(timeoutMs: Int32, _ body: (UnsafeBufferPointer<UInt8>) -> Void) -> TransportEvent {
    var fds = [
      pollfd(fd: input, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeup, events: Int16(POLLIN), revents: 0),
    ]
    let ready = poll(&fds, nfds_t(wakeup >= 0 ? 2 : 1), timeoutMs)
    if ready < 0 { return errno == EINTR ? .timeout : .endOfInput }
    if wakeup >= 0 && fds[1].revents != 0 { return .signal }
    if ready == 0 { return .timeout }
    let n = chunk.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
    if n > 0 {
      chunk.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[0..<n])) }
      return .data(n)
    }
    if n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) { return .timeout }
    return .endOfInput
  }

  /// True when more input can be read without blocking.
  package func inputIsWaiting() -> Bool {
    var fds = [pollfd(fd: input, events: Int16(POLLIN), revents: 0)]
    return poll(&fds, 1, 0) > 0
  }

  /// Writes all of `bytes`. Returns false if stdout is closed (EPIPE) or broken, or if a stopping
  /// signal arrived while stdout was not taking bytes (a reader that never reads cannot hold us).
  package func write(_ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBytes { raw in
      var offset = 0
      var atomicOnly = false  // after stdout filled up once, write only what poll promised room for
      while offset < raw.count {
        guard waitUntilWritable() else { return false }
        let size = min(raw.count - offset, atomicOnly ? Self.atomicWrite : 1 << 16)
        let n = posixWrite(output, raw.baseAddress! + offset, size)
        if n > 0 {
          offset += n
          if n < size { atomicOnly = true }
        } else if n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) {
          atomicOnly = true
        } else {
          return false
        }
      }
      return true
    }
  }

  /// Bytes a pipe that polls writable always takes without blocking (`PIPE_BUF`).
  #if canImport(Darwin)
  private static let atomicWrite = 512
  #else
  private static let atomicWrite = 4096
  #endif

  /// Waits until stdout takes bytes. False when a stopping signal came first, or stdout failed.
  private func waitUntilWritable() -> Bool {
    var fds = [
      pollfd(fd: output, events: Int16(POLLOUT), revents: 0), pollfd(fd: wakeup, events: Int16(POLLIN), revents: 0),
    ]
    while true {
      let ready = poll(&fds, nfds_t(wakeup >= 0 ? 2 : 1), -1)
      if ready < 0 && errno == EINTR { continue }
      if ready < 0 { return false }
      if fds[0].revents & Int16(POLLOUT) != 0 { return true }  // room first: a signal still flushes what fits
      if fds[0].revents != 0 { return false }  // POLLERR, POLLHUP, POLLNVAL without POLLOUT
      if wakeup >= 0 && fds[1].revents != 0 { return false }
    }
  }
}
