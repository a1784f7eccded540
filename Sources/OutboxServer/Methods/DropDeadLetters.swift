package import OutboxDelivery
package import OutboxDomain
package import OutboxJSON
package import OutboxJSONRPC
package import OutboxStore
package import OutboxSupport
package import OutboxTransport

/// `dropDeadLetters {ids}` → `{dropped}`: deletes the named dead letters for good.
enum DropDeadLetters: RPCMethod {
  package static let name = "dropDeadLetters"
  package static let commitsFirst = true

  package static func handle(_ params: inout Params, _ service: Service) throws -> ObjectResult {
    let ids = DeadLetters.ids(&params, required: true)
    _ = try params.finish()
    let dropped = service.store.dropDead(DeadLetters.seqs(ids: ids ?? [], in: service.store.items))
    return ObjectResult([JSONMember("dropped", .int(Int64(dropped)))])
  }
}
