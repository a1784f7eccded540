/// `flushPending {max?, format?, leaseMs?, defaultUser?}` hands out pending items in seq order.
///
/// - Drain (no `leaseMs`): returns the items and removes exactly them. An item saved while the flush
///   is handled was not picked, so it stays pending (the seed's read-then-remove race cannot happen).
/// - Lease (`leaseMs`): hides the items until `ackFlush`, `releaseFlush` or expiry; a repeat while the
///   lease is live returns the same `flushId` and items, which covers a lost response.
/// - `format: "usersTrack"` returns `/users/track` bodies; items with no identifier (and no
///   `defaultUser`) stay pending and are listed in `skipped`.
/// Transcript: `Protocol/transcripts/flush.txt`.
package enum FlushPending: RPCMethod {
  package static let name = "flushPending"
  package static let commitsFirst = true

  package static func handle(_ params: inout Params, _ service: Service) throws -> FlushResult {
    let max = params.int("max", min: 1).map { Int(clamping: $0) } ?? Int.max
    let usersTrack = params.choice("format", ["items", "usersTrack"]) == "usersTrack"
    let leaseMs = params.int("leaseMs", min: 1)
    let defaultUser = params.user("defaultUser")
    _ = try params.finish()
    service.expireLease()
    let now = service.clock.now()
    let needsUser = usersTrack && defaultUser == nil
    var skipped: [PendingItem] = []
    var flushId: String
    var items: [PendingItem]
    if let leaseMs {
      if let lease = service.lease {
        flushId = lease.flushId
        items = service.store.items(seqs: lease.seqs)
      } else {
        flushId = service.newID(at: now)
        items = service.store.firstAvailable(max: max, skipped: &skipped) { !needsUser || $0.user != nil }
        service.store.setLeased(items.map(\.seq), true)
        let expires = now + Int64(clamping: leaseMs)
        service.lease = Lease(flushId: flushId, seqs: items.map(\.seq), expiresAt: expires)
      }
    } else {
      flushId = service.newID(at: now)
      items = service.store.firstAvailable(max: max, skipped: &skipped) { !needsUser || $0.user != nil }
      service.store.remove(seqs: items.map(\.seq))
      service.recordRemoval(items.map(\.seq))
      service.rememberFinished(flushId)
    }
    var result = FlushResult(flushId: flushId, items: items, superseded: items.supersededSeqs)
    if let lease = service.lease, lease.flushId == flushId { result.leaseExpiresAt = lease.expiresAt }
    if usersTrack {
      result.requests = UsersTrack.requests(
        items, superseded: result.superseded, defaultUser: defaultUser, limit: service.config.trackBatchLimit)
      result.skipped = skipped.map(\.id)
    }
    result.remaining = service.store.count - service.store.leasedCount
    return result
  }
}

/// The flush result, written straight from the stored item bytes.
package struct FlushResult: JSONEncodable {
  var flushId: String
  var items: [PendingItem]
  var superseded: Set<UInt64>
  var leaseExpiresAt: Int64?
  /// Set for `format: "usersTrack"`, which sends these instead of `items`.
  var requests: [JSONValue]?
  var skipped: [String] = []
  var remaining = 0

  package func encodeJSON(into out: inout [UInt8]) {
    out.appendASCII("{\"flushId\":")
    out.appendJSONString(flushId)
    if let leaseExpiresAt {
      out.appendASCII(",\"leaseExpiresAt\":\"")
      UTCTime.append(ms: leaseExpiresAt, to: &out)
      out.append(UInt8(ascii: "\""))
    }
    if let requests {
      out.appendASCII(",\"requests\":")
      JSONValue.array(requests).encodeJSON(into: &out)
      out.appendASCII(",\"skipped\":")
      let reasons = skipped.map { JSONValue.object([JSONMember("id", .string($0)), JSONMember("reason", .string("missing_identifier"))]) }
      JSONValue.array(reasons).encodeJSON(into: &out)
    } else {
      out.appendASCII(",\"items\":[")
      for (n, item) in items.enumerated() {
        if n > 0 { out.append(UInt8(ascii: ",")) }
        item.encodeJSON(into: &out, superseded: superseded.contains(item.seq))
      }
      out.append(UInt8(ascii: "]"))
    }
    out.appendASCII(",\"remaining\":")
    out.appendInt(Int64(remaining))
    out.append(UInt8(ascii: "}"))
  }
}
