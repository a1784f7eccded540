import OutboxJSONRPC
import OutboxStore

/// `listDeadLetters {max?, fleet?}` → `{deadLetters, total}`: items Braze refused, or that have no
/// identifier (`no_identifier`), kept durably out of the pending set with the reason.
enum ListDeadLetters: RPCMethod {
  package static let name = "listDeadLetters"
  package static let commitsFirst = true

  package static func handle(_ params: inout Params, _ service: Service) throws -> DeadLetterReply<DeadLetterList> {
    let max = params.int("max", in: 1...Int64(Int32.max)).map { Int($0) } ?? Int.max
    let fleet = DeadLetters.fleet(&params)
    _ = try params.finish()
    if let reply = try DeadLetterReply<DeadLetterList>.fleet(
      fleet, service,
      { stream throws(RPCError) in
        try stream.list(max: max)
      })
    {
      return reply
    }
    return .now(DeadLetterList(rows: service.store.items.deadRows(max: max), store: service.store.items))
  }
}
