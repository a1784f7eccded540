import OutboxJSONRPC
import OutboxSupport
import OutboxTransport

/// The command line's own stdout output — the information commands' text, the `id: null` line of a
/// start-up failure, `verify`'s report and `dump`'s lines — goes through the transport, as the
/// service's replies do (LayeringTests: nothing else writes to fd 1).
extension PushOutbox {
  /// Writes all of `bytes` to stdout. False when stdout is closed or broken.
  nonisolated static func writeStdout(_ bytes: [UInt8]) -> Bool { StdioTransport(wakeup: -1).write(bytes) }

  /// `writeStdout` for the one-shots that report a failed write as a `FileError`.
  nonisolated static func writeStdoutOrThrow(_ bytes: [UInt8]) throws(FileError) {
    guard writeStdout(bytes) else { throw FileError(operation: "write", path: "stdout", code: EPIPE) }
  }

  /// `--help`, `--version`, `--generate-man`, `--generate-completion`: printed, then exit 0.
  static func printInfo(
    _ what: String, _ standard: StandardDescriptors, _ text: String, terminator: String = "\n"
  ) {
    refuseClosedStdout("push-outbox", "the \(what)", standard)
    _ = writeStdout(Array((text + terminator).utf8))
  }

  /// A command whose output is its data exits 2 (usage) when stdout was closed at start: nothing is
  /// read, drained or acked.
  static func refuseClosedStdout(_ who: String, _ output: String, _ standard: StandardDescriptors) {
    guard let refusal = standard.closedStdoutRefusal(output) else { return }
    Log.stderr("\(who): \(refusal)")
    exit(ExitCode.usage.rawValue)
  }

  /// The one way a start-up failure of the service is reported: stderr, then the `id: null` line.
  static func fail(_ message: String, _ rpcError: RPCError, _ code: ExitCode) -> Never {
    Log.stderr("push-outbox: \(message)")
    _ = writeStdout(Array((ResponseWriter.line(Response(id: .null, .error(rpcError))) + "\n").utf8))
    exit(code.rawValue)
  }
}
