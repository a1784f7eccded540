import OutboxDelivery
import OutboxJSON
import OutboxJSONRPC

/// `deliverPending {max?, workDoneToken?, _meta?}` → `{delivered, deadLettered, retrying, remaining}`:
/// one delivery pass to Braze, answered when it is done.
///
/// A long call (`LongCalls`): the pass runs in steps between requests, so the loop keeps serving
/// while it runs, and its reply may come after replies to later requests. It sends until
/// everything is delivered, `max` objects were sent, or a failure paused delivery (the items are
/// kept and `retrying` counts them). Cancelling it starts nothing new; requests in flight finish
/// and are applied as usual. With `--deliver` the same engine also runs in the background; this
/// call then just runs a pass now.
package enum DeliverPending: RPCMethod {
  package static let name = "deliverPending"
  package static let commitsFirst = true

  package static func handle(_ params: inout Params, _ service: Service) throws -> LongStart {
    let max = params.int("max", in: 1...Int64(Int32.max)).map { Int($0) } ?? Int.max
    let progress = params.progressTokens(title: name)
    _ = try params.finish()
    guard let delivery = service.delivery else {
      let missing =
        service.config.delivery.endpoint == nil
        ? "--braze-endpoint" : "an API key ($BRAZE_API_KEY or --braze-api-key-file)"
      throw RPCError.app(
        .deliveryNotConfigured, "delivery_not_configured", "Delivery not configured",
        [JSONMember("missing", .string(missing))])
    }
    service.expireLeases()
    return LongStart(PassWork(Deliverer.Pass(delivery, max: max)), progress: progress)
  }

  /// A pass as long work: each step applies answers and starts what may start.
  final class PassWork: LongWork {
    let pass: Deliverer.Pass

    init(_ pass: Deliverer.Pass) { self.pass = pass }

    func step(_ service: Service) -> Result<any JSONEncodable, RPCError>? {
      guard let result = pass.step() else { return nil }
      return .success(
        ObjectResult([
          JSONMember("delivered", .int(Int64(result.delivered))),
          JSONMember("deadLettered", .int(Int64(result.deadLettered))),
          JSONMember("retrying", .int(Int64(result.retrying))), JSONMember("remaining", .int(Int64(result.remaining))),
        ]))
    }

    func pollTimeoutMs(_ service: Service) -> Int32 { pass.pollTimeoutMs() }

    var progress: (done: Int, total: Int) { pass.progress }

    /// Nothing to undo: a pass no longer stepped starts nothing, and the deliverer's `tick`
    /// applies the answers of its requests in flight.
    func cancel(_ service: Service) {}
  }
}
