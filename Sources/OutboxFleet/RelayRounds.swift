import OutboxDelivery
import OutboxDomain
import OutboxJSON
import OutboxNATS
import OutboxServer
import OutboxStore
import OutboxSupport

/// One round of relaying: items leased durably under `flushId`, and the messages that carry them.
struct RelayRound: Sendable {
  let flushId: String
  let items: [PendingItem]
  /// What is published, in order: every item but those over the server's `max_payload`.
  let messages: [OutgoingMessage]
  /// The index in `items` of each entry of `messages`.
  let sent: [Int]
  /// Indexes in `items` too large to publish: dead letters at settling.
  let tooLarge: Set<Int>
}

/// What relaying did so far, for `relay`'s summary and `status.relay`.
struct RelayCounts: Sendable, Equatable {
  var published = 0
  var duplicates = 0
  var deadLettered = 0
  var tooLarge = 0
}

/// The store's side of relaying, the one home for `relay` (one-shot, `RelaySession`) and `--relay`
/// (in the background while serving, `BackgroundRelay`): lease a round durably BEFORE any of it is
/// published, build its messages, and settle it from the publish acks (acked items leave the store,
/// `duplicate: true` counts, the rest are pending again). Used on the thread that owns the store.
struct RelayRounds {
  let service: Service
  let stream: String
  let defaultUser: UserIdentifier?
  private(set) var counts = RelayCounts()

  init(service: Service, stream: String, defaultUser: UserIdentifier?) {
    self.service = service
    self.stream = stream
    self.defaultUser = defaultUser
  }

  enum Outcome: Equatable {
    case done, progress
    case stalled(String)
  }

  /// Items one round leases at most.
  static let roundSize = 2000
  /// Subjects `<stream>.0` … `<stream>.63`.
  static let shards: UInt64 = 64

  /// The prefix of every relay lease's flush id.
  static let leasePrefix = "relay-"

  /// Leases of a relay or delivery that died with its process: their items are pending again.
  func releaseLeftovers() {
    let store = service.store
    for lease in store.leases where lease.origin == .delivery { _ = try? store.release(lease.flushId) }
    if let error = store.commit() { Log.stderr("push-outbox relay: cannot record released leases: \(error)") }
  }

  /// Leases up to `max` available items for `leaseMs` and commits the lease: nothing is handed out
  /// before it is durable. Nil when no item is available. Items without a user (and no
  /// `--default-user`) become dead letters (`no_identifier`).
  mutating func lease(max: Int, leaseMs: Int64, maxPayload: Int) throws(NATSError) -> RelayRound? {
    service.expireLeases()
    let store = service.store
    let table = store.items
    let hasDefault = defaultUser != nil
    let pick = store.pickAvailable(max: max, identified: { hasDefault || table.has(.hasUser, row: $0) })
    counts.deadLettered += pick.noIdentifier.count
    if let error = store.commit() { throw NATSError(.refused, "cannot record the store: \(error)") }
    guard !pick.rows.isEmpty else { return nil }
    let items = pick.items
    let flushId = Self.leasePrefix + String(UInt64.random(in: 0...UInt64.max), radix: 36)
    let expires = service.clock.now() + leaseMs
    store.lease(Lease(flushId: flushId, seqs: items.map(\.seq), expiresAt: expires, note: [], origin: .delivery))
    if let error = store.commit() {  // nothing is published before its lease is durable
      _ = try? store.release(flushId)
      throw NATSError(.refused, "cannot record the lease: \(error)")
    }
    let all = items.map(message)
    // A message over the server's max_payload would close the connection: a dead letter instead.
    let tooLarge = Set(all.indices.filter { all[$0].payload.count + Self.headerRoom > maxPayload })
    let sent = all.indices.filter { !tooLarge.contains($0) }
    return RelayRound(
      flushId: flushId, items: items, messages: sent.map { all[$0] }, sent: sent, tooLarge: tooLarge)
  }

  /// Room for the `Nats-Msg-Id` header block next to the payload.
  static let headerRoom = 128

  /// Removes the acked items (`acks` in the order of `round.messages`; empty when the publish
  /// failed); the others are pending again. Names why none went.
  @discardableResult
  mutating func settle(_ round: RelayRound, acks: [PublishAck?]) -> Outcome {
    var delivered: [UInt64] = []
    var dead: [(UInt64, String)] = []
    var refusal: String?
    var duplicates = 0
    for index in round.tooLarge.sorted() { dead.append((round.items[index].seq, Self.tooLargeReason)) }
    for (position, index) in round.sent.enumerated() {
      let item = round.items[index]
      switch position < acks.count ? acks[position] : nil {
      case .stored(_, let duplicate)?:
        delivered.append(item.seq)
        if duplicate { duplicates += 1 }
      case .refused(let text, let code)?:
        let full = acks[position]?.isFull == true
        refusal = full ? "the stream \(stream) is full (\(text)); items stay local" : "\(text) (\(code))"
      case nil: refusal = refusal ?? "no publish ack before the deadline (NATS slow or gone)"
      }
    }
    service.store.settle(round.flushId, delivered: delivered, dead: dead)
    if let error = service.store.commit() { return .stalled("cannot record the acks: \(error)") }
    counts.published += delivered.count
    counts.duplicates += duplicates
    counts.tooLarge += dead.count
    if !delivered.isEmpty || !dead.isEmpty { return .progress }
    return .stalled(refusal ?? "nothing acked")
  }

  /// Gives a round back unpublished (or unacked): its items are pending again.
  func release(_ round: RelayRound) {
    _ = try? service.store.release(round.flushId)
    if let error = service.store.commit() { Log.stderr("push-outbox: cannot record a released relay lease: \(error)") }
  }

  /// The dead-letter reason of an item larger than the server's `max_payload`.
  static let tooLargeReason = "over_nats_max_payload"

  /// `{"id","seq","kind","savedAt","deliveryCount","user",…}` to `<stream>.<shard of the user>`.
  private func message(_ item: PendingItem) -> OutgoingMessage {
    var payload: [UInt8] = []
    item.encodeJSON(into: &payload)
    var key = item.body.withUnsafeBytes { UserKey.of(body: $0, item: { item }) }
    if key == nil, let defaultUser {
      var user: [UInt8] = []
      defaultUser.json.encodeJSON(into: &user)
      payload.removeLast()
      payload.append(contentsOf: #","user":"#.utf8)
      payload.append(contentsOf: user)
      payload.append(UInt8(ascii: "}"))
      key = user
    }
    let shard = Self.fnv1a(key ?? []) % Self.shards
    return OutgoingMessage(subject: stream + "." + String(shard), messageID: item.id.text, payload: payload)
  }

  static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return hash
  }
}
