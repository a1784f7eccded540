import OutboxJSON
import OutboxJSONRPC
import OutboxStore

/// `requeueDeadLetters {ids?, fleet?}` → `{requeued}`: dead letters (those named, or all) are pending again.
enum RequeueDeadLetters: RPCMethod {
  package static let name = "requeueDeadLetters"
  package static let commitsFirst = true

  package static func handle(_ params: inout Params, _ service: Service) throws -> DeadLetterReply<ObjectResult> {
    let ids = DeadLetters.ids(&params, required: false)
    let fleet = DeadLetters.fleet(&params)
    _ = try params.finish()
    if let reply = try DeadLetterReply<ObjectResult>.fleet(
      fleet, service,
      { stream throws(RPCError) in
        try stream.requeue(ids: ids)
      })
    {
      return reply
    }
    let store = service.store.items
    let seqs =
      ids.map { DeadLetters.seqs(ids: $0, in: store) } ?? store.deadRows(max: Int.max).map(store.seq(row:))
    let requeued = try service.store.requeue(seqs)
    return .now(ObjectResult([JSONMember("requeued", .int(Int64(requeued.count)))]))
  }
}
