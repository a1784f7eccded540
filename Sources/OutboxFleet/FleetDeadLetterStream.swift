package import OutboxJSON
package import OutboxJSONRPC
package import OutboxNATS
import OutboxServer
import OutboxSupport

/// The dead-letter methods' `fleet: true` over NATS: the stream `<stream>_DEAD` the deliverers
/// publish refused messages to (`FleetSession.deadLetter`, each the item with `deadReason`). Each
/// call opens its own connection (deadlines of `seconds`) on the thread `OffLoopCall` gives it.
package struct FleetDeadLetterStream: FleetDeadLetters {
  let settings: NATSOptions
  let stream: String
  var seconds = 5.0

  package init(settings: NATSOptions, stream: String) {
    self.settings = settings
    self.stream = stream
  }

  var dead: String { stream + "_DEAD" }

  /// One dead letter: the message, its item (without `deadReason`) and the reason.
  private struct Entry {
    var message: StoredMessage
    var id: String
    var item: JSONValue
    var reason: String
  }

  package func list(max: Int) throws(RPCError) -> JSONValue {
    try connected { js throws(NATSError) in
      var out: [JSONValue] = []
      let total = try entries(js, max: max) { entry throws(NATSError) in
        out.append(
          .object([
            JSONMember("reason", .string(entry.reason)), JSONMember("item", entry.item),
            JSONMember("seq", .int(Int64(entry.message.seq))),
          ]))
        return true
      }
      return .object([JSONMember("deadLetters", .array(out)), JSONMember("total", .int(total))])
    }
  }

  /// Each one is published to `<stream>.<its shard>` with a new `Nats-Msg-Id` (its own id would
  /// be a duplicate inside the stream's window, and JetStream would drop it), then deleted.
  package func requeue(ids: [String]?) throws(RPCError) -> JSONValue {
    let wanted = ids.map(Set.init)
    var requeued = 0
    return try connected { js throws(NATSError) in
      do throws(NATSError) {
        _ = try entries(js, max: Int.max) { entry throws(NATSError) in
          guard wanted?.contains(entry.id) ?? true else { return true }
          let shard = entry.message.subject.split(separator: ".").last.map(String.init) ?? "0"
          var payload: [UInt8] = []
          entry.item.encodeJSON(into: &payload)
          let messageID = entry.id + ".requeued." + String(UInt64.random(in: 0...UInt64.max), radix: 36)
          let outgoing = OutgoingMessage(subject: stream + "." + shard, messageID: messageID, payload: payload)
          switch try js.publish([outgoing], to: stream, deadline: deadline()).first ?? nil {
          case .stored?: break
          case .refused(let text, let code)?: throw NATSError(.refused, "\(stream): \(text) (\(code))")
          case nil: throw NATSError(.timeout, "no publish ack from \(stream) before the deadline")
          }
          _ = try js.deleteMessage(dead, seq: entry.message.seq, deadline: deadline())
          requeued += 1
          return true
        }
      } catch {
        throw NATSError(error.kind, error.description + "; requeued \(requeued) before that")
      }
      return .object([JSONMember("requeued", .int(Int64(requeued)))])
    }
  }

  package func drop(ids: [String]) throws(RPCError) -> JSONValue {
    let wanted = Set(ids)
    return try connected { js throws(NATSError) in
      var dropped = 0
      _ = try entries(js, max: Int.max) { entry throws(NATSError) in
        if wanted.contains(entry.id), try js.deleteMessage(dead, seq: entry.message.seq, deadline: deadline()) {
          dropped += 1
        }
        return true
      }
      return .object([JSONMember("dropped", .int(Int64(dropped)))])
    }
  }

  private func deadline() -> Double { Clock.monotonicSeconds() + seconds }

  /// Visits the dead letters in stream order, at most `max`, while `visit` says go on; answers how
  /// many the stream holds.
  private func entries(
    _ js: JetStream, max: Int, _ visit: (Entry) throws(NATSError) -> Bool
  ) throws(NATSError) -> Int64 {
    guard let bounds = try js.streamBounds(dead, deadline: deadline()), bounds.messages > 0 else { return 0 }
    var seen = 0
    var seq = bounds.first
    while seq <= bounds.last && seen < max {
      defer { seq += 1 }
      guard let message = try js.message(dead, seq: seq, deadline: deadline()) else { continue }
      seen += 1
      guard try visit(Self.entry(message)) else { break }
    }
    return bounds.messages
  }

  /// The item and reason a dead message carries; one that is not an item is listed as it is.
  private static func entry(_ message: StoredMessage) -> Entry {
    guard let value = try? JSONReader.parse(message.payload, maxDepth: 1000), case .object(let members) = value else {
      let text = String(decoding: message.payload, as: UTF8.self)
      return Entry(message: message, id: "", item: .string(text), reason: "not_an_item")
    }
    let reason = value["deadReason"]?.stringValue ?? "unknown"
    let item = JSONValue.object(members.filter { $0.key != "deadReason" })
    return Entry(message: message, id: value["id"]?.stringValue ?? "", item: item, reason: reason)
  }

  /// Runs `work` on a new connection, closed after; a NATS failure is `-32603` with `reason`
  /// `nats_failed` and the failure in `detail` (never a token).
  private func connected(_ work: (JetStream) throws(NATSError) -> JSONValue) throws(RPCError) -> JSONValue {
    do throws(NATSError) {
      var options = settings
      options.connectSeconds = seconds
      let js = JetStream(try NATSConnection(options))
      defer { js.connection.close() }
      return try work(js)
    } catch {
      throw .app(
        .internalError, "nats_failed", "NATS failed",
        [JSONMember("detail", .string(error.description)), JSONMember("stream", .string(dead))])
    }
  }
}
