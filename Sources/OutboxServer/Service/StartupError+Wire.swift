import OutboxJSON
package import OutboxJSONRPC
package import OutboxStore

/// The one place where a store's start-up failure becomes the wire's error (`-32007`, `-32005`,
/// `-32006`); its exit code is `StartupError.exit` (OutboxCommandLine).
extension StartupError {
  package var rpcError: RPCError {
    switch kind {
    case .refused(let reason, let details):
      .app(.startupFailed, reason, "Start-up failed", [JSONMember("detail", .string(message))] + details)
    case .locked(let pid):
      .app(.storeLocked, "store_locked", "Store locked", [JSONMember("pid", .string(pid))])
    case .unsupportedVersion(let file, let version):
      .app(
        .unsupportedStoreVersion, "unsupported_store_version", "Unsupported store version",
        [JSONMember("file", .string(file)), JSONMember("version", version)])
    case .unavailable:
      .startupFailed("store_unavailable", message)
    }
  }
}

extension RPCError {
  /// `-32007 Start-up failed`: the `id: null` stdout line for a start-up failure that has no code of
  /// its own (a usage error, exit 2; a store that cannot be created or read, exit 1).
  package static func startupFailed(_ reason: String, _ detail: String) -> RPCError {
    .app(.startupFailed, reason, "Start-up failed", [JSONMember("detail", .string(detail))])
  }
}
