import OutboxDelivery
import OutboxJSON
import OutboxNATS
import OutboxStore
import OutboxSupport

/// Settling at the stream: acks, dead letters, messages given back, and keeping held ones alive.
extension FleetSession {
  /// Applies one answer at the stream: ack, dead letter, or give back with the pause as delay.
  func settle(_ outcome: HeldDelivery.Outcome) throws(NATSError) {
    guard let consumer else { return }
    switch outcome {
    case .settled(let done, let dead):
      for item in done { messages.removeValue(forKey: item.seq).map(consumer.ack) }
      delivered += done.count
      try deadLetter(dead.compactMap { pair in messages.removeValue(forKey: pair.0.seq).map { ($0, pair.1) } })
    case .retry(let items, let reason):
      let last = items.filter { (messages[$0.seq]?.deliveries ?? 0) >= Self.maxDeliver }
      try deadLetter(
        last.compactMap { i in messages.removeValue(forKey: i.seq).map { ($0, "max_deliveries: " + reason) } })
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

  func nak(_ items: [PendingItem], untilMs: Int64) {
    guard let consumer else { return }
    let delay = Double(max(0, untilMs - Clock.system.now())) / 1000
    for item in items { messages.removeValue(forKey: item.seq).map { consumer.nak($0, delaySeconds: delay) } }
    givenBack += items.count
    givenBackUntil = max(givenBackUntil, untilMs)
  }

  /// Publishes each message with its reason to `<stream>_DEAD.<shard>`, then acks it; one the dead
  /// stream did not take is given back instead.
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
    let acks = try js.publish(outgoing, deadline: Clock.monotonicSeconds() + 5)
    for ((message, reason), ack) in zip(pairs, acks) {
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
