package import OutboxJSON

/// `exit` (a notification): the process stops reading, takes its final snapshot and ends with exit
/// code 0 after `shutdown`, 1 without it (LSP's lifecycle). Sent with an id, it is answered `null` first.
package enum Exit: RPCMethod {
  package static let name = "exit"

  package static func handle(_ params: inout Params, _ service: Service) throws -> JSONValue {
    _ = try params.finish()
    service.lifecycle.exitCode = service.lifecycle.shutDown ? 0 : 1
    return .null
  }
}
