package import OutboxJSONRPC
package import OutboxServer
package import OutboxSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The executable's own stdout writes, outside the transport (LayeringTests allows `Info*` files):
/// the information commands' text, and the `id: null` line of a start-up failure.
extension PushOutbox {
  /// `--help`, `--version`, `--generate-man`, `--generate-completion`: printed, then exit 0.
  static func printInfo(
    _ what: String, _ standard: StandardDescriptors, _ text: String, terminator: String = "\n"
  ) {
    refuseClosedStdout("push-outbox", "the \(what)", standard)
    print(text, terminator: terminator)
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
    print(ResponseWriter.line(Response(id: .null, .error(rpcError))))
    exit(code.rawValue)
  }
}
