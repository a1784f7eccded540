import OutboxJSON
import OutboxStore

/// `releaseFlush {flushId}` → `{released}`: ends a live lease early; its items are pending again,
/// with `deliveryCount` raised by one. Transcript: `Protocol/transcripts/lease.txt`.
package enum ReleaseFlush: RPCMethod {
  package static let name = "releaseFlush"
  package static let commitsFirst = true

  package static func handle(_ params: inout Params, _ service: Service) throws -> ObjectResult {
    let flushId = params.string("flushId", required: true)
    _ = try params.finish()
    service.expireLeases()
    let released = try service.store.release(flushId!)
    return ObjectResult([JSONMember("released", .int(Int64(released)))])
  }
}
