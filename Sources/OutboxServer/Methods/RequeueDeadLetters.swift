package import OutboxDelivery
package import OutboxDomain
package import OutboxJSON
package import OutboxJSONRPC
package import OutboxStore
package import OutboxSupport
package import OutboxTransport

/// `requeueDeadLetters {ids?}` → `{requeued}`: dead letters (those named, or all) are pending again.
enum RequeueDeadLetters: RPCMethod {
  package static let name = "requeueDeadLetters"
  package static let commitsFirst = true

  package static func handle(_ params: inout Params, _ service: Service) throws -> ObjectResult {
    let ids = DeadLetters.ids(&params, required: false)
    _ = try params.finish()
    let store = service.store.items
    let seqs =
      ids.map { DeadLetters.seqs(ids: $0, in: store) } ?? store.deadRows(max: Int.max).map { store.table.seqs[$0] }
    let requeued = service.store.requeue(seqs)
    return ObjectResult([JSONMember("requeued", .int(Int64(requeued.count)))])
  }
}
