import OutboxDelivery
import OutboxJSON
import OutboxNATS
import OutboxStore
import OutboxSupport

/// Settling at the stream: acks, dead letters, messages given back, and keeping held ones alive.
extension FleetSession {
  /// Applies one answer at the stream: ack, dead letter, or give back with the pause as delay.
  /// Objects Braze refused become dead letters only while this deliverer leads; one that lost its
  /// lease (a pause past it, a lost connection) gives them back instead, and the next leader sends
  /// them again and stores their dead letters (issue 40 #3). What Braze took is acked either way.
  func settle(_ outcome: HeldDelivery.Outcome, leading: Bool) throws(NATSError) {
    guard consumer != nil else { return }
    switch outcome {
    case .settled(let done, let dead):
      for item in done { messages.removeValue(forKey: item.seq).map { consumer?.ack($0) } }
      delivered += done.count
      guard leading else { return nak(dead.map(\.0), untilMs: Clock.system.now()) }
      try deadLetter(dead.compactMap { pair in messages[pair.0.seq].map { ($0, pair.1) } })
    case .retry(let items, let reason):
      if leading {
        let last = items.filter { (messages[$0.seq]?.deliveries ?? 0) >= Self.maxDeliver }
        try deadLetter(last.compactMap { i in messages[i.seq].map { ($0, "max_deliveries: " + reason) } })
      }
      let rest = items.filter { messages[$0.seq] != nil }
      engine.expectBack(rest, untilMs: engine.pausedUntil + ackWaitSeconds * 1000)
      nak(rest, untilMs: engine.pausedUntil)
    case .stopped(let items, _):
      nak(items, untilMs: Clock.system.now())
    }
  }

  /// Every held item not in flight goes back to the stream, redelivered from `untilMs`.
  func giveBack(untilMs: Int64) {
    nak(engine.takeWaiting(untilMs: untilMs + ackWaitSeconds * 1000), untilMs: untilMs)
  }

  /// Gives items back to the stream. A message at its last delivery (`maxDeliver`) would never be
  /// delivered again, and would stay in the stream unseen: it becomes a dead letter instead.
  func nak(_ items: [PendingItem], untilMs: Int64) {
    guard let consumer else { return }
    let last = items.compactMap { item in
      messages[item.seq].flatMap { $0.deliveries >= Self.maxDeliver ? ($0, "max_deliveries: given back") : nil }
    }
    if !last.isEmpty { try? deadLetter(last) }
    let delay = Double(max(0, untilMs - Clock.system.now())) / 1000
    var count = 0
    for item in items {
      guard let message = messages.removeValue(forKey: item.seq) else { continue }
      consumer.nak(message, delaySeconds: delay)
      count += 1
    }
    givenBack += count
    givenBackUntil = max(givenBackUntil, untilMs)
  }

  /// Publishes each message with its reason to `<stream>_DEAD.<shard>` and acks it once the dead
  /// stream's ack says it is stored there (the original is never acked before); one the dead stream
  /// did not take stays held (`messages`), to be given back. A failure of the connection leaves them
  /// unacked: the server delivers them again after AckWait.
  func deadLetter(_ pairs: [(FetchedMessage, String)]) throws(NATSError) {
    guard !pairs.isEmpty, let js, let consumer else { return }
    let outgoing = pairs.map { message, reason in
      var payload = Array(message.payload.dropLast(message.payload.last == UInt8(ascii: "}") ? 1 : 0))
      payload.append(contentsOf: #","deadReason":"#.utf8)
      JSONValue.string(reason).encodeJSON(into: &payload)
      payload.append(UInt8(ascii: "}"))
      let shard = message.subject.split(separator: ".").last.map(String.init) ?? "0"
      let id = message.headers.first { $0.name.lowercased() == "nats-msg-id" }?.value ?? String(message.streamSequence)
      return OutgoingMessage(subject: deadStream + "." + shard, messageID: id, payload: payload)
    }
    let acks: [PublishAck?]
    do throws(NATSError) {
      acks = try js.publish(outgoing, to: deadStream, deadline: Clock.monotonicSeconds() + 5)
    } catch {
      for (message, _) in pairs { messages[message.streamSequence] = nil }
      throw error
    }
    for ((message, reason), ack) in zip(pairs, acks) {
      messages[message.streamSequence] = nil
      if case .stored? = ack {
        consumer.ack(message)
        deadLettered += 1
        Log.stderr("push-outbox deliver: a dead letter in \(deadStream): \(reason)")
      } else {
        consumer.nak(message, delaySeconds: 1)
        givenBack += 1
      }
    }
  }

  /// `+WPI` for every held item about every third of AckWait.
  func keepAlive(_ consumer: NATSPullConsumer) {
    let now = Clock.monotonicSeconds()
    guard now >= nextKeepAlive else { return }
    nextKeepAlive = now + Double(ackWaitSeconds) / 3
    for seq in engine.heldSeqs { messages[seq].map(consumer.inProgress) }
  }
}
