import Foundation

/// The real `push-outbox` binary, spawned over real pipes.
final class ServerProcess {
  let process = Process()
  private let stdinPipe = Pipe()
  private let stdoutPipe = Pipe()
  private let stderrPipe = Pipe()
  private var pending: [UInt8] = []
  private let stderrBuffer = StderrBuffer()

  /// Starts the binary with `arguments` (tests add `--memory` or `--store` themselves).
  init(_ arguments: [String], environment: [String: String] = [:]) throws {
    signal(SIGPIPE, SIG_IGN)  // a child that exits must not kill the test runner
    process.executableURL = URL(fileURLWithPath: Paths.binary)
    process.arguments = arguments
    var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PUSH_OUTBOX_") }
    env.merge(environment) { $1 }
    process.environment = env
    process.standardInput = stdinPipe
    process.standardOutput = stdoutPipe
    process.standardError = stderrPipe
    let buffer = stderrBuffer
    stderrPipe.fileHandleForReading.readabilityHandler = { handle in buffer.append(handle.availableData) }
    try process.run()
  }

  var pid: Int32 { process.processIdentifier }
  var stderrText: String { stderrBuffer.text }

  /// After exit: stops the background reader and reads what it had not read yet, so no line is missed.
  func drainStderr() {
    stderrPipe.fileHandleForReading.readabilityHandler = nil
    stderrBuffer.append(stderrPipe.fileHandleForReading.readDataToEndOfFile())
  }
  var stdoutFD: Int32 { stdoutPipe.fileHandleForReading.fileDescriptor }
  var stdinFD: Int32 { stdinPipe.fileHandleForWriting.fileDescriptor }

  func write(_ bytes: [UInt8]) {
    stdinPipe.fileHandleForWriting.write(Data(bytes))
  }

  func send(_ line: String) { write(Array((line + "\n").utf8)) }

  func closeInput() { try? stdinPipe.fileHandleForWriting.close() }

  /// Closes our end of the child's stdout, so its next write fails with EPIPE.
  func closeOutput() { try? stdoutPipe.fileHandleForReading.close() }

  /// The next stdout line (without `\n`), or nil on timeout or end of output.
  func readLine(timeout: Double = 10) -> String? {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
      if let newline = pending.firstIndex(of: 0x0A) {
        let line = String(decoding: pending[..<newline], as: UTF8.self)
        pending.removeSubrange(...newline)
        return line
      }
      let remaining = deadline.timeIntervalSinceNow
      guard remaining > 0, readChunk(timeoutMs: Int32(remaining * 1000)) else { return nil }
    }
  }

  /// Reads stdout until it closes. Returns everything not yet read.
  func readToEnd(timeout: Double = 30) -> [UInt8] {
    let deadline = Date().addingTimeInterval(timeout)
    while deadline.timeIntervalSinceNow > 0, readChunk(timeoutMs: Int32(deadline.timeIntervalSinceNow * 1000)) {}
    defer { pending.removeAll() }
    return pending
  }

  private func readChunk(timeoutMs: Int32) -> Bool {
    var fds = [pollfd(fd: stdoutFD, events: Int16(POLLIN), revents: 0)]
    guard poll(&fds, 1, max(1, timeoutMs)) > 0 else { return false }
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    let n = chunk.withUnsafeMutableBytes { read(stdoutFD, $0.baseAddress, $0.count) }
    guard n > 0 else { return false }
    pending.append(contentsOf: chunk[0..<n])
    return true
  }

  /// Waits for exit and returns the status, or nil on timeout.
  func waitForExit(timeout: Double = 10) -> Int32? {
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning {
      if deadline.timeIntervalSinceNow < 0 { return nil }
      usleep(2000)
    }
    return process.terminationStatus
  }

  var terminatedBySignal: Bool { process.terminationReason == .uncaughtSignal }

  func kill(_ signal: Int32) { _ = Foundation.kill(pid, signal) }

  deinit {
    if process.isRunning { kill(SIGKILL); process.waitUntilExit() }
    stderrPipe.fileHandleForReading.readabilityHandler = nil
  }
}

/// Collects a child's stderr from Foundation's reader thread.
private final class StderrBuffer: @unchecked Sendable {
  // Safety: every access holds `lock`.
  private let lock = NSLock()
  private var data = Data()

  func append(_ chunk: Data) { lock.withLock { data.append(chunk) } }
  var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
}

/// Runs the binary on `input` with stdin closed at the end; returns stdout, stderr and the exit status.
/// One thread feeds stdin in pipe-sized pieces and drains stdout, so neither side can block the other.
func runBinary(
  _ arguments: [String], input: [UInt8], timeout: Double = 60
) throws -> (stdout: [UInt8], stderr: String, status: Int32?) {
  let server = try ServerProcess(arguments)
  var written = 0
  var output: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 1 << 16)
  let deadline = Date().addingTimeInterval(timeout)
  if input.isEmpty { server.closeInput() }
  while deadline.timeIntervalSinceNow > 0 {
    var fds = [pollfd(fd: server.stdoutFD, events: Int16(POLLIN), revents: 0)]
    if written < input.count { fds.append(pollfd(fd: server.stdinFD, events: Int16(POLLOUT), revents: 0)) }
    guard poll(&fds, nfds_t(fds.count), 1000) >= 0 else { break }
    if fds.count > 1, fds[1].revents & Int16(POLLOUT) != 0 {
      let end = min(input.count, written + 4096)
      let n = input[written..<end].withUnsafeBytes { Foundation.write(server.stdinFD, $0.baseAddress, $0.count) }
      if n > 0 { written += n } else { written = input.count }
      if written >= input.count { server.closeInput() }
    } else if fds.count > 1, fds[1].revents & Int16(POLLERR | POLLHUP) != 0 {
      written = input.count
      server.closeInput()
    }
    if fds[0].revents != 0 {
      let n = chunk.withUnsafeMutableBytes { read(server.stdoutFD, $0.baseAddress, $0.count) }
      if n <= 0 { break }
      output.append(contentsOf: chunk[0..<n])
    }
  }
  let status = server.waitForExit(timeout: max(1, deadline.timeIntervalSinceNow))
  if status != nil { server.drainStderr() }
  return (output, server.stderrText, status)
}

/// Lines of a byte buffer (split on `\n` only).
func lines(_ bytes: [UInt8]) -> [String] {
  bytes.split(separator: 0x0A, omittingEmptySubsequences: false).dropLast().map { String(decoding: $0, as: UTF8.self) }
}
