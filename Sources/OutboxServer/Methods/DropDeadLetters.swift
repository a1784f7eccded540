import OutboxJSON
import OutboxJSONRPC
import OutboxStore

/// `dropDeadLetters {ids, fleet?}` → `{dropped}`: deletes the named dead letters for good.
enum DropDeadLetters: RPCMethod {
  package static let name = "dropDeadLetters"
  package static let commitsFirst = true

  package static func handle(_ params: inout Params, _ service: Service) throws -> DeadLetterReply<ObjectResult> {
    let ids = DeadLetters.ids(&params, required: true)
    let fleet = DeadLetters.fleet(&params)
    _ = try params.finish()
    if let reply = try DeadLetterReply<ObjectResult>.fleet(
      fleet, service,
      { stream throws(RPCError) in
        try stream.drop(ids: ids ?? [])
      })
    {
      return reply
    }
    let dropped = service.store.dropDead(DeadLetters.seqs(ids: ids ?? [], in: service.store.items))
    return .now(ObjectResult([JSONMember("dropped", .int(Int64(dropped)))]))
  }
}
