import OutboxJSON
import OutboxStore

/// `ackFlush {flushId}` → `{acked}`: removes exactly the items of a live lease, durably.
///
/// Items saved during the lease are not in it and survive. The lease may come from an earlier
/// process: leases are journaled. A repeat after success answers `acked: 0`; an unknown or expired
/// lease is `-32004`. Transcript: `Protocol/transcripts/lease.txt`.
package enum AckFlush: RPCMethod {
  package static let name = "ackFlush"
  package static let commitsFirst = true

  package static func handle(_ params: inout Params, _ service: Service) throws -> ObjectResult {
    let flushId = params.string("flushId", required: true)
    _ = try params.finish()
    service.expireLeases()
    let acked = try service.store.ack(flushId!)
    return ObjectResult([JSONMember("acked", .int(Int64(acked)))])
  }
}
