package import OutboxDelivery
package import OutboxDomain
import OutboxJSON
package import OutboxStore
import OutboxSupport

/// `flushPending {max?, format?, leaseMs?, defaultUser?}` hands out pending items in seq order.
///
/// - Drain (no `leaseMs`): returns the items and removes exactly them. An item saved while the flush
///   is handled was not picked, so it stays pending (the seed's read-then-remove race cannot happen).
/// - Lease (`leaseMs`): hides the items until `ackFlush`, `releaseFlush` or expiry; a repeat while the
///   lease is live returns the same `flushId` and items, which covers a lost response.
/// - `format: "usersTrack"` returns `/users/track` bodies; items with no identifier (and no
///   `defaultUser`) are listed in `skipped` and become dead letters (reason `no_identifier`).
/// Transcript: `Protocol/transcripts/flush.txt`.
package enum FlushPending: RPCMethod {
  package static let name = "flushPending"
  package static let commitsFirst = true
  /// The `format` values: items as stored, or `/users/track` request bodies.
  package static let formats: (items: StaticString, usersTrack: StaticString) = ("items", "usersTrack")

  package static func handle(_ params: inout Params, _ service: Service) throws -> FlushReply {
    let max = params.int("max", in: 1...Int64(Int32.max)).map { Int($0) } ?? Int.max
    let usersTrack = params.choice("format", [formats.items, formats.usersTrack]) == "\(formats.usersTrack)"
    let leaseMs = params.int("leaseMs", in: 1...3_155_760_000_000)  // 100 years: now + leaseMs cannot overflow
    let defaultUser = params.user("defaultUser")
    _ = try params.finish()
    service.expireLeases()
    let shape = Shape(usersTrack: usersTrack, defaultUser: defaultUser)
    guard let leaseMs else { return reply(drain(max: max, shape, service), shape, service) }
    // A repeat while a lease is live: the same lease, in the shape it was first asked for.
    if let lease = service.store.leases.first(where: { $0.origin == .flush }) {
      let (first, skipped) = Shape.decode(lease.note)
      let items = service.store.items.items(seqs: lease.seqs)
      return reply(
        result(lease.flushId, items, first, skipped, lease.expiresAt, service, rendered: false), first, service)
    }
    let (items, skipped) = pick(max: max, shape, service)
    let flushId = service.newID(at: service.clock.now())
    guard !items.isEmpty else { return .now(result(flushId, [], shape, skipped, nil, service)) }  // nothing to lease
    let (sum, overflow) = service.clock.now().addingReportingOverflow(leaseMs)
    let expires = overflow ? UTCTime.latest : min(sum, UTCTime.latest)
    let lease = Lease(
      flushId: flushId, seqs: items.map(\.seq), expiresAt: expires,
      note: shape.encode(skipped: skipped))
    service.store.lease(lease)
    return reply(result(flushId, items, shape, skipped, lease.expiresAt, service, rendered: false), shape, service)
  }

  /// Hands out and removes up to `max` items (their bodies are copied out first: `result.items`).
  private static func drain(max: Int, _ shape: Shape, _ service: Service) -> FlushResult {
    let result = peek(max: max, shape, service, rendered: false)
    service.store.drain(result.seqs, flushId: result.flushId)
    return result
  }

  /// What a drain of up to `max` items would hand out, without removing them (`push-outbox flush`
  /// removes them once their lines are written). Items with no identifier still become dead letters.
  /// Rendered `/users/track` bodies are written from the held rows (`trackFromRows`).
  package static func peek(max: Int, _ shape: Shape, _ service: Service, rendered: Bool = true) -> FlushResult {
    if rendered && shape.usersTrack { return trackFromRows(max: max, shape, service) }
    let (items, skipped) = pick(max: max, shape, service)
    var flushed = result(
      service.newID(at: service.clock.now()), items, shape, skipped, nil, service, rendered: rendered)
    flushed.remaining -= items.count
    return flushed
  }

  /// The first `max` available items; for `/users/track` without a default user, only items that name one.
  private static func pick(max: Int, _ shape: Shape, _ service: Service) -> ([PendingItem], [String]) {
    let store = service.store.items
    let pick = service.store.pickAvailable(max: max) { !needsUser(shape) || store.has(.hasUser, row: $0) }
    return (pick.items, pick.noIdentifier.map { store.id(row: $0).text })
  }

  /// For `/users/track` without a default user, only items that name one can be sent.
  static func needsUser(_ shape: Shape) -> Bool { shape.usersTrack && shape.defaultUser == nil }

  private static func result(
    _ flushId: String, _ items: [PendingItem], _ shape: Shape, _ skipped: [String], _ expires: Int64?,
    _ service: Service, rendered: Bool = true
  ) -> FlushResult {
    var result = FlushResult(
      flushId: flushId, items: items, seqs: items.map(\.seq), superseded: items.supersededSeqs)
    result.leaseExpiresAt = expires
    if shape.usersTrack {
      result.requests = []
      result.skipped = skipped
      if rendered { result = render(result, shape, service) }
    }
    result.remaining = unleased(service)
    return result
  }

  /// Held items not in a lease (pending or dead letters): what `remaining` counts before a drain takes any.
  static func unleased(_ service: Service) -> Int { service.store.count - service.store.items.leasedCount }
}

/// How a flush presents its items: as items, or as `/users/track` bodies with an optional default user.
/// Kept with a lease (as its note), so a repeat in a later process answers in the same shape.
package struct Shape: Sendable {
  package var usersTrack: Bool
  var defaultUser: UserIdentifier?

  package init(usersTrack: Bool, defaultUser: UserIdentifier? = nil) {
    self.usersTrack = usersTrack
    self.defaultUser = defaultUser
  }

  func encode(skipped: [String]) -> [UInt8] {
    var out: [UInt8] = []
    JSONValue.object([
      JSONMember("usersTrack", .bool(usersTrack)), JSONMember("defaultUser", defaultUser?.json ?? .null),
      JSONMember("skipped", .array(skipped.map(JSONValue.string))),
    ]).encodeJSON(into: &out)
    return out
  }

  static func decode(_ note: [UInt8]) -> (Shape, [String]) {
    guard case .object(let m)? = try? JSONReader.parse(note, maxDepth: 16) else {
      return (Shape(usersTrack: false), [])
    }
    var issues = Issues()
    let user = m["defaultUser"].flatMap {
      $0.isNull ? nil : UserIdentifier.parse($0, path: "defaultUser", issues: &issues)
    }
    let skipped: [String]
    if case .array(let values)? = m["skipped"] { skipped = values.compactMap(\.stringValue) } else { skipped = [] }
    return (Shape(usersTrack: m["usersTrack"] == .bool(true), defaultUser: user), skipped)
  }
}

/// The flush result, written straight from the stored item bytes.
package struct FlushResult: JSONEncodable {
  /// One line per `/users/track` body, or per item: what `push-outbox flush` writes.
  package func lines(into out: inout [UInt8]) -> Int {
    if let requests {
      out.reserveCapacity(out.count + requests.reduce(0) { $0 + $1.bodySize + 1 })
      for request in requests {
        request.appendBody(to: &out)
        out.append(UInt8(ascii: "\n"))
      }
      return requests.count
    }
    out.reserveCapacity(out.count + renderedSize)
    var savedAtText = UTCTimeText()
    for item in items {
      item.encodeJSON(into: &out, superseded: superseded.contains(item.seq), savedAtText: &savedAtText)
      out.append(UInt8(ascii: "\n"))
    }
    return items.count
  }

  package var flushId: String
  /// The items copied out; none when the bodies were written from the held rows (`trackFromRows`).
  package var items: [PendingItem]
  /// The items handed out, in order (`items`' seqs when they were copied out).
  package var seqs: [UInt64]
  var superseded: Set<UInt64>
  var leaseExpiresAt: Int64?
  /// Set for `format: "usersTrack"`, which sends these bodies instead of `items`.
  package var requests: [TrackBatch]?
  /// The objects in `requests`.
  package var objectCount: Int { requests?.reduce(0) { $0 + $1.objectCount } ?? 0 }
  /// The items already written, joined by commas (a long flush writes them across loop turns).
  var renderedItems: [UInt8]?
  /// About how many bytes the items take written out (to reserve once, not grow many times).
  var renderedSize: Int { items.reduce(0) { $0 + $1.body.count + 160 } }
  package var skipped: [String] = []
  package var remaining = 0
  /// Items picked whose bodies the store rejected as it wrote them (`trackFromRows`): left out, and
  /// dropped as malformed at the next commit.
  package var dropped = 0

  package func encodeJSON(into out: inout [UInt8]) {
    out.appendASCII("{\"flushId\":")
    out.appendJSONString(flushId)
    if let leaseExpiresAt {
      out.appendASCII(",\"leaseExpiresAt\":\"")
      UTCTime.append(ms: leaseExpiresAt, to: &out)
      out.append(UInt8(ascii: "\""))
    }
    if let requests {
      out.appendASCII(",\"requests\":[")
      for (n, request) in requests.enumerated() {
        if n > 0 { out.append(UInt8(ascii: ",")) }
        request.appendBody(to: &out)
      }
      out.append(UInt8(ascii: "]"))
      out.appendASCII(",\"skipped\":")
      let reasons = skipped.map {
        JSONValue.object([JSONMember("id", .string($0)), JSONMember("reason", .string("no_identifier"))])
      }
      JSONValue.array(reasons).encodeJSON(into: &out)
    } else if let renderedItems {
      out.appendASCII(",\"items\":[")
      out.append(contentsOf: renderedItems)
      out.append(UInt8(ascii: "]"))
    } else {
      out.appendASCII(",\"items\":[")
      out.reserveCapacity(out.count + renderedSize)
      var savedAtText = UTCTimeText()
      for (n, item) in items.enumerated() {
        if n > 0 { out.append(UInt8(ascii: ",")) }
        item.encodeJSON(into: &out, superseded: superseded.contains(item.seq), savedAtText: &savedAtText)
      }
      out.append(UInt8(ascii: "]"))
    }
    out.appendASCII(",\"remaining\":")
    out.appendInt(Int64(remaining))
    out.append(UInt8(ascii: "}"))
  }
}
