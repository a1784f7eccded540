package import OutboxDelivery
package import OutboxDomain
package import OutboxJSON
package import OutboxJSONRPC
package import OutboxStore
package import OutboxSupport
package import OutboxTransport

/// `deliverPending {max?}` → `{delivered, deadLettered, retrying, remaining}`: one delivery pass to
/// Braze, answered when it is done.
///
/// The pass runs inside the handler, so the request loop answers nothing else until it ends: it
/// sends until everything is delivered, `max` objects were sent, or a failure paused delivery (the
/// items are kept and `retrying` counts them). With `--deliver` the same engine also runs in the
/// background; this call then just runs a pass now.
enum DeliverPending: RPCMethod {
  package static let name = "deliverPending"
  package static let commitsFirst = true

  package static func handle(_ params: inout Params, _ service: Service) throws -> ObjectResult {
    let max = params.int("max", in: 1...Int64(Int32.max)).map { Int($0) } ?? Int.max
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
    let pass = delivery.runPass(max: max)
    return ObjectResult([
      JSONMember("delivered", .int(Int64(pass.delivered))), JSONMember("deadLettered", .int(Int64(pass.deadLettered))),
      JSONMember("retrying", .int(Int64(pass.retrying))), JSONMember("remaining", .int(Int64(pass.remaining))),
    ])
  }
}
