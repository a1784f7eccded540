package import OutboxJSON

/// `shutdown` → `null`, after the journal is committed and a snapshot taken (LSP's lifecycle). Every
/// later request but `exit` is refused with `-32600` `shutting_down`; the process keeps running until
/// `exit` or the end of stdin. Transcript: `Protocol/transcripts/lifecycle.txt`.
package enum Shutdown: RPCMethod {
  package static let name = "shutdown"
  /// The snapshot must hold every save answered before it.
  package static let commitsFirst = true

  package static func handle(_ params: inout Params, _ service: Service) throws -> JSONValue {
    _ = try params.finish()
    service.snapshotNow()
    service.lifecycle.shutDown = true
    return .null
  }
}
