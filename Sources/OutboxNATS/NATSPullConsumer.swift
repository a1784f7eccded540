import OutboxJSON
import OutboxSupport

/// One message fetched from a pull consumer, with what acking it needs.
package struct FetchedMessage: Sendable, Equatable {
  package var subject: String
  package var headers: [NATSHeader]
  package var payload: [UInt8]
  /// `$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>`.
  package var ackSubject: String

  /// How many times the server has delivered it (1 the first time), read from the ack subject.
  package var deliveries: Int { Int(clamping: number(fromEnd: 4)) }

  /// Its sequence in the stream, read from the ack subject (0 when the subject has another shape).
  package var streamSequence: UInt64 { number(fromEnd: 3) }

  /// The decimal field `k` places before the ack subject's last (0: the last) when the subject has at
  /// least 9 dot-separated fields, else 0; read over its bytes (this runs for every message fetched).
  private func number(fromEnd k: Int) -> UInt64 {
    var subject = ackSubject
    return subject.withUTF8 { bytes in
      guard bytes.count(where: { $0 == UInt8(ascii: ".") }) >= 8 else { return 0 }
      var end = bytes.count
      for _ in 0..<k { end = (bytes[..<end].lastIndex(of: UInt8(ascii: ".")) ?? 0) }
      let start = (bytes[..<end].lastIndex(of: UInt8(ascii: ".")) ?? -1) + 1
      guard start < end, end - start <= 20 else { return 0 }
      var value: UInt64 = 0
      for byte in bytes[start..<end] {
        guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return 0 }
        let (times, over1) = value.multipliedReportingOverflow(by: 10)
        let (sum, over2) = times.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
        if over1 || over2 { return 0 }
        value = sum
      }
      return value
    }
  }
}

/// A durable pull consumer with explicit acks (docs.nats.io reference/jetstream/api: CONSUMER.CREATE,
/// CONSUMER.MSG.NEXT): `fetch` asks for a batch on a reply subject of the connection's inbox; each
/// message is then acked (`+ACK`), refused for later (`-NAK` with a delay) or kept (`+WPI`, which
/// restarts its AckWait while its request to Braze is still running).
package struct NATSPullConsumer {
  package let stream: JetStream
  package let streamName: String
  package let name: String

  package init(_ stream: JetStream, streamName: String, name: String) {
    self.stream = stream
    self.streamName = streamName
    self.name = name
  }

  /// Creates the durable consumer, or finds it (the server answers an identical config with the
  /// existing one).
  package func ensure(
    ackWaitSeconds: Int64, maxDeliver: Int, maxAckPending: Int = 1000, deadline: Double
  ) throws(NATSError) {
    let config = JSONValue.object([
      JSONMember("max_ack_pending", .int(Int64(maxAckPending))),
      JSONMember("durable_name", .string(name)), JSONMember("ack_policy", .string("explicit")),
      JSONMember("deliver_policy", .string("all")), JSONMember("ack_wait", .int(ackWaitSeconds * 1_000_000_000)),
      JSONMember("max_deliver", .int(Int64(maxDeliver))), JSONMember("replay_policy", .string("instant")),
    ])
    let body = JSONValue.object([JSONMember("stream_name", .string(streamName)), JSONMember("config", config)])
    let answer = try stream.api("CONSUMER.DURABLE.CREATE.\(streamName).\(name)", body, deadline: deadline)
    if let error = answer["error"] { throw stream.apiError("CONSUMER.DURABLE.CREATE", error) }
  }

  /// Up to `batch` messages: what arrives before the server's `expiresSeconds` or `deadline` ends the
  /// request (status 404: nothing pending, 408: the request expired; 100: a heartbeat, skipped).
  /// `noWait`: what is available now, without waiting for more.
  package func fetch(
    batch: Int, expiresSeconds: Double, noWait: Bool = false, deadline: Double
  ) throws(NATSError) -> [FetchedMessage] {
    let connection = stream.connection
    let reply = connection.newInbox()
    let sid = connection.subscribe(reply)
    defer { connection.unsubscribe(sid) }
    let request = JSONValue.object(
      [JSONMember("batch", .int(Int64(batch)))]
        + (noWait
          ? [JSONMember("no_wait", .bool(true))] : [JSONMember("expires", .int(Int64(expiresSeconds * 1e9)))]))
    var payload: [UInt8] = []
    request.encodeJSON(into: &payload)
    connection.publish("$JS.API.CONSUMER.MSG.NEXT.\(streamName).\(name)", reply: reply, payload: payload)
    try connection.flush(deadline: deadline)
    var out: [FetchedMessage] = []
    while out.count < batch, let message = try connection.nextMessage(sid: sid, deadline: deadline) {
      switch message.status {
      case nil:
        guard let ack = message.reply else { continue }
        out.append(
          FetchedMessage(
            subject: message.subject,
            headers: message.headers, payload: message.payload, ackSubject: ack))
      case 100: continue
      case 404, 408, 409: return out
      case let code?: throw NATSError(.refused, "CONSUMER.MSG.NEXT answered status \(code)")
      }
    }
    return out
  }

  package func ack(_ message: FetchedMessage) {
    stream.connection.publish(message.ackSubject, payload: Array("+ACK".utf8))
  }

  /// Redelivered after `delaySeconds`.
  package func nak(_ message: FetchedMessage, delaySeconds: Double) {
    let text = "-NAK {\"delay\":\(Int64(delaySeconds * 1e9))}"
    stream.connection.publish(message.ackSubject, payload: Array(text.utf8))
  }

  /// Still working on it: its AckWait starts again.
  package func inProgress(_ message: FetchedMessage) {
    stream.connection.publish(message.ackSubject, payload: Array("+WPI".utf8))
  }
}
