package import OutboxDelivery
package import OutboxDomain
package import OutboxJSON
package import OutboxNATS
package import OutboxServer
package import OutboxStore
package import OutboxSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The rounds of one `push-outbox relay`: lease, publish, settle (see `RelayCommand`).
struct RelaySession {
  let service: Service
  let nats: NATSOptions
  let options: RelayCommand.Options
  let defaultUser: UserIdentifier?
  private var stream: JetStream?
  private(set) var published = 0
  private(set) var duplicates = 0
  private(set) var deadLettered = 0
  private(set) var tooLargeCount = 0
  private var problem: String?

  init(service: Service, nats: NATSOptions, options: RelayCommand.Options, defaultUser: UserIdentifier?) {
    self.service = service
    self.nats = nats
    self.options = options
    self.defaultUser = defaultUser
  }

  var summary: String {
    let store = service.store
    var text = "published \(published) (\(duplicates) already in the stream)"
    if deadLettered > 0 { text += ", \(deadLettered) without an identifier moved to the dead letters (no_identifier)" }
    if tooLargeCount > 0 {
      text +=
        ", \(tooLargeCount) larger than the server's max_payload moved to the dead letters (\(Self.tooLargeReason))"
    }
    text += "; left in the store: \(store.count) pending, \(store.items.deadCount) dead letters"
    return problem.map { text + "; stopped: " + $0 } ?? text
  }

  /// Rounds until nothing is left (0), or until `--max-seconds` pass with items still local (1).
  mutating func run() -> ExitCode {
    releaseLeftovers()
    let deadline = Clock.monotonicSeconds() + options.maxSeconds
    var backoff = NATSBackoff()
    while !StopRequest.isRequested {
      do throws(NATSError) {
        let js = try connected(deadline: deadline)
        switch try round(js, deadline: deadline) {
        case .done: return service.store.count == 0 ? .success : .failure
        case .progress:
          backoff.reset()
          continue
        case .stalled(let reason): problem = reason
        }
      } catch {
        problem = error.description
        stream?.connection.close()
        stream = nil
        if error.kind == .refused || error.kind == .auth { return .failure }  // retrying cannot help
      }
      let delay = backoff.next()
      guard Clock.monotonicSeconds() + delay < deadline else {
        problem = (problem ?? "") + "; gave up after --max-seconds \(options.maxSeconds)"
        return .failure
      }
      let until = Clock.monotonicSeconds() + delay
      while Clock.monotonicSeconds() < until && !StopRequest.isRequested { usleep(20_000) }
    }
    problem = "stopped by a signal; what is left stays pending"
    return .failure
  }

  /// Leases of a relay or delivery that died with its process: their items are pending again.
  private func releaseLeftovers() {
    let store = service.store
    for lease in store.leases where lease.origin == .delivery { _ = try? store.release(lease.flushId) }
    if let error = store.commit() { Log.stderr("push-outbox relay: cannot record released leases: \(error)") }
  }

  private mutating func connected(deadline: Double) throws(NATSError) -> JetStream {
    if let stream { return stream }
    var settings = nats
    settings.connectSeconds = max(0.5, min(5, deadline - Clock.monotonicSeconds()))
    let connection = try NATSConnection(settings)
    let js = JetStream(connection)
    let shape = StreamSettings(
      name: options.stream, subjects: [options.stream + ".*"], maxBytes: options.maxBytes)
    do throws(NATSError) {
      try js.ensureStream(shape, deadline: Clock.monotonicSeconds() + 5)
    } catch {
      connection.close()
      throw error
    }
    stream = js
    return js
  }

  enum Outcome {
    case done, progress
    case stalled(String)
  }

  /// One lease of up to `roundSize` items, published and settled: acked items leave the store.
  private mutating func round(_ js: JetStream, deadline: Double) throws(NATSError) -> Outcome {
    service.expireLeases()
    let store = service.store
    let table = store.items
    let hasDefault = defaultUser != nil
    let pick = store.pickAvailable(
      max: RelayCommand.roundSize, identified: { hasDefault || table.table.has(.hasUser, $0) })
    deadLettered += pick.noIdentifier.count
    if let error = store.commit() { throw NATSError(.refused, "cannot record the store: \(error)") }
    guard !pick.rows.isEmpty else { return .done }
    let items = pick.rows.map(table.item(row:))
    let flushId = "relay-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
    let expires = service.clock.now() + Int64(options.maxSeconds * 1000) + 60_000
    store.lease(Lease(flushId: flushId, seqs: items.map(\.seq), expiresAt: expires, note: [], origin: .delivery))
    if let error = store.commit() {  // nothing is published before its lease is durable
      _ = try? store.release(flushId)
      throw NATSError(.refused, "cannot record the lease: \(error)")
    }
    let messages = items.map(message)
    // A message over the server's max_payload would close the connection: a dead letter instead.
    let limit = js.connection.maxPayload
    let tooLarge = Set(messages.indices.filter { messages[$0].payload.count + Self.headerRoom > limit })
    let sent = messages.indices.filter { !tooLarge.contains($0) }
    var acks = [PublishAck?](repeating: nil, count: messages.count)
    do throws(NATSError) {
      let answers = try js.publish(sent.map { messages[$0] }, deadline: min(deadline, Clock.monotonicSeconds() + 10))
      for (index, answer) in zip(sent, answers) { acks[index] = answer }
    } catch {
      settle(flushId, items, acks: [], tooLarge: tooLarge)
      throw error
    }
    KillPoint.reach(.relayAcked)
    return settle(flushId, items, acks: acks, tooLarge: tooLarge)
  }

  /// Room for the `Nats-Msg-Id` header block next to the payload.
  static let headerRoom = 128

  /// Removes the acked items; the others are pending again. Names why none went.
  @discardableResult
  private mutating func settle(
    _ flushId: String, _ items: [PendingItem], acks: [PublishAck?], tooLarge: Set<Int>
  ) -> Outcome {
    var delivered: [UInt64] = []
    var dead: [(UInt64, String)] = []
    var refusal: String?
    for (index, item) in items.enumerated() {
      if tooLarge.contains(index) {
        dead.append((item.seq, Self.tooLargeReason))
        continue
      }
      switch index < acks.count ? acks[index] : nil {
      case .stored(_, let duplicate)?:
        delivered.append(item.seq)
        if duplicate { duplicates += 1 }
      case .refused(let text, let code)?:
        let full = acks[index]?.isFull == true
        refusal = full ? "the stream \(options.stream) is full (\(text)); items stay local" : "\(text) (\(code))"
      case nil: refusal = refusal ?? "no publish ack before the deadline (NATS slow or gone)"
      }
    }
    service.store.settle(flushId, delivered: delivered, dead: dead)
    if let error = service.store.commit() { return .stalled("cannot record the acks: \(error)") }
    published += delivered.count
    tooLargeCount += dead.count
    if !delivered.isEmpty || !dead.isEmpty { return .progress }
    return .stalled(refusal ?? "nothing acked")
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
    let shard = Self.fnv1a(key ?? []) % RelayCommand.shards
    return OutgoingMessage(subject: options.stream + "." + String(shard), messageID: item.id.text, payload: payload)
  }

  static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return hash
  }
}
