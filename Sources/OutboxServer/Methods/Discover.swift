import OutboxDelivery
import OutboxJSON
import OutboxJSONRPC
import OutboxStore
import OutboxTransport

/// `rpc.discover {}` → the OpenRPC document `Protocol/openrpc.json`, exactly.
///
/// The build embeds the file (`Sources/EmbedOpenRPC`), so the binary needs no files at run time.
enum Discover: RPCMethod {
  package static let name = "rpc.discover"

  package static func handle(_ params: inout Params, _ service: Service) throws -> JSONValue {
    _ = try params.finish()
    do {
      return try JSONReader.parse(Array(openRPCDocument.utf8), maxDepth: 1000)
    } catch {
      throw RPCError.internalError("the embedded OpenRPC document is not valid JSON: \(error.reason)")
    }
  }
}
