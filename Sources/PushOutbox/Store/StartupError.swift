/// A failure before serving: a message for stderr, the process exit code, and the JSON-RPC error that
/// is also written to stdout (with `id: null`) so a client sees every start-up failure the same way.
package struct StartupError: Error, Sendable {
  package var message: String
  package var exitCode: Int32
  package var rpcError: RPCError? = nil

  package init(message: String, exitCode: Int32, rpcError: RPCError? = nil) {
    self.message = message
    self.exitCode = exitCode
    self.rpcError = rpcError
  }

  /// The store cannot be used (exit 1): `-32007 Start-up failed`, `reason` names why, e.g. `unsafe_store`,
  /// `missing_data`.
  package static func refused(_ reason: String, _ message: String, _ extra: [JSONMember] = []) -> StartupError {
    StartupError(
      message: message, exitCode: 1,
      rpcError: .app(
        ErrorCode(rawValue: -32007), reason, "Start-up failed", [JSONMember("detail", .string(message))] + extra))
  }

  /// A file of a format version this build does not read (exit 2); nothing was touched.
  package static func unsupportedVersion(file: String, version: JSONValue) -> StartupError {
    var text: [UInt8] = []
    version.encodeJSON(into: &text)
    return StartupError(
      message:
        "\(file) has format version \(String(decoding: text, as: UTF8.self)), newer than or unknown to this build; nothing was touched",
      exitCode: 2,
      rpcError: .app(
        .unsupportedStoreVersion, "unsupported_store_version", "Unsupported store version",
        [JSONMember("file", .string(file)), JSONMember("version", version)]))
  }
}
