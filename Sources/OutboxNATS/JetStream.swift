package import OutboxJSON
import OutboxSupport

/// The stream a relay publishes into: the settings push-outbox needs (work-queue retention, file
/// storage, a duplicate window, `discard: new` at `maxBytes`) and the comparison with a stream that
/// already exists (docs.nats.io reference/jetstream/api: STREAM.INFO, STREAM.CREATE).
package struct StreamSettings: Sendable, Equatable {
  package var name: String
  package var subjects: [String]
  package var maxBytes: Int64
  /// At least two minutes, longer than the relay's longest retry.
  package var duplicateWindowSeconds: Int64 = 120

  package init(name: String, subjects: [String], maxBytes: Int64) {
    self.name = name
    self.subjects = subjects
    self.maxBytes = maxBytes
  }

  /// The STREAM.CREATE request.
  package var json: JSONValue {
    .object([
      JSONMember("name", .string(name)), JSONMember("subjects", .array(subjects.map(JSONValue.string))),
      JSONMember("retention", .string("workqueue")), JSONMember("storage", .string("file")),
      JSONMember("discard", .string("new")), JSONMember("max_bytes", .int(maxBytes)),
      JSONMember("duplicate_window", .int(duplicateWindowSeconds * 1_000_000_000)),
      JSONMember("num_replicas", .int(1)),
    ])
  }

  /// What makes an existing stream's `config` unfit, one phrase per difference (empty: fit).
  package func differences(from config: JSONValue) -> [String] {
    var out: [String] = []
    func expect(_ key: String, _ wanted: String) {
      let found = config[key]?.stringValue ?? "none"
      if found != wanted { out.append("\(key) is \(found), not \(wanted)") }
    }
    expect("retention", "workqueue")
    expect("storage", "file")
    expect("discard", "new")
    let window = config["duplicate_window"]?.intValue ?? 0
    if window < duplicateWindowSeconds * 1_000_000_000 {
      out.append("duplicate_window is \(window / 1_000_000_000) s, less than \(duplicateWindowSeconds) s")
    }
    let held = Set(config["subjects"]?.arrayValue?.compactMap(\.stringValue) ?? [])
    let missing = subjects.filter { !held.contains($0) }
    if !missing.isEmpty { out.append("subjects lack \(missing.joined(separator: ", "))") }
    return out
  }
}

/// The outcome of one JetStream publish, from its ack (`{"stream","seq","duplicate"}` or `{"error"}`).
package enum PublishAck: Sendable, Equatable {
  case stored(seq: UInt64, duplicate: Bool)
  /// The error's text and JetStream `err_code` (10077: maximum bytes, 10047: storage, …).
  case refused(String, code: Int)

  /// The ack of a publish into `stream`. It counts as stored only when it names that stream and a
  /// positive sequence: an ack from another stream (a subject overlap, a misconfigured or hostile
  /// server) or with `seq` 0 is a refusal, and the items it was for stay where they are.
  package static func parse(_ message: NATSMessage, stream: String) -> PublishAck {
    if message.status == 503 { return .refused("no stream takes the subject (no responders)", code: 503) }
    guard let value = try? JSONReader.parse(message.payload, maxDepth: 16) else {
      return .refused("the publish ack is not JSON", code: 0)
    }
    if let error = value["error"] {
      let text = error["description"]?.stringValue ?? "unknown error"
      return .refused(text, code: Int(error["err_code"]?.intValue ?? error["code"]?.intValue ?? 0))
    }
    guard let named = value["stream"]?.stringValue, let seq = value["seq"]?.intValue else {
      return .refused("the publish ack has no stream and seq", code: 0)
    }
    guard named == stream else {
      return .refused("the publish ack names the stream \(Self.quoted(named)), not \(stream)", code: 0)
    }
    guard seq > 0 else { return .refused("the publish ack has seq \(seq), not a stored message's", code: 0) }
    return .stored(seq: UInt64(seq), duplicate: value["duplicate"]?.boolValue ?? false)
  }

  /// A name from the server, shortened and quoted for a message.
  private static func quoted(_ text: String) -> String {
    "\"" + String(text.unicodeScalars.prefix(64).filter { $0.value >= 0x20 && $0.value != 0x7f }.map(Character.init))
      + (text.unicodeScalars.count > 64 ? "…" : "") + "\""
  }

  /// A stream at its limit with `discard: new`: the items stay local until it drains.
  package var isFull: Bool {
    guard case .refused(let text, let code) = self else { return false }
    return code == 10077 || code == 10047 || text.contains("maximum") || text.contains("insufficient resources")
  }
}

/// One message for `JetStream.publish`: subject, headers (`Nats-Msg-Id`, expectations) and payload.
package struct OutgoingMessage: Sendable {
  package var subject: String
  package var headers: [NATSHeader]
  package var payload: [UInt8]

  package init(subject: String, messageID: String, payload: [UInt8]) {
    self.init(subject: subject, headers: [NATSHeader("Nats-Msg-Id", messageID)], payload: payload)
  }

  package init(subject: String, headers: [NATSHeader], payload: [UInt8]) {
    self.subject = subject
    self.headers = headers
    self.payload = payload
  }
}

/// The JetStream API over a connection.
package struct JetStream {
  package let connection: NATSConnection

  package init(_ connection: NATSConnection) { self.connection = connection }

  /// The stream's `config`, or nil when there is no such stream.
  package func streamConfig(_ name: String, deadline: Double) throws(NATSError) -> JSONValue? {
    let answer = try api("STREAM.INFO." + name, .object([]), deadline: deadline)
    if let error = answer["error"] {
      if error["err_code"]?.intValue == 10059 || error["code"]?.intValue == 404 { return nil }
      throw apiError("STREAM.INFO", error)
    }
    return answer["config"] ?? .null
  }

  /// The stream's `state.messages` and `state.bytes`, nil when there is no such stream.
  package func streamState(_ name: String, deadline: Double) throws(NATSError) -> (messages: Int64, bytes: Int64)? {
    let answer = try api("STREAM.INFO." + name, .object([]), deadline: deadline)
    if let error = answer["error"] {
      if error["err_code"]?.intValue == 10059 || error["code"]?.intValue == 404 { return nil }
      throw apiError("STREAM.INFO", error)
    }
    return (answer["state"]?["messages"]?.intValue ?? 0, answer["state"]?["bytes"]?.intValue ?? 0)
  }

  package func createStream(_ settings: StreamSettings, deadline: Double) throws(NATSError) {
    let answer = try api("STREAM.CREATE." + settings.name, settings.json, deadline: deadline)
    if let error = answer["error"] { throw apiError("STREAM.CREATE", error) }
  }

  /// Creates the stream when missing; an existing one must fit, and is never changed.
  package func ensureStream(_ settings: StreamSettings, deadline: Double) throws(NATSError) {
    guard let config = try streamConfig(settings.name, deadline: deadline) else {
      return try createStream(settings, deadline: deadline)
    }
    let differences = settings.differences(from: config)
    guard differences.isEmpty else {
      throw NATSError(
        .refused,
        "stream \(settings.name) exists with an incompatible configuration, left unchanged: "
          + differences.joined(separator: "; "))
    }
  }

  /// Publishes every message (pipelined, header `Nats-Msg-Id`) into `stream` and waits until
  /// `deadline`, or until `stop` says so (checked every 100 ms), for their acks. Answers one entry
  /// per message, nil where no ack came.
  package func publish(
    _ messages: [OutgoingMessage], to stream: String, deadline: Double, stop: () -> Bool = { false }
  ) throws(NATSError) -> [PublishAck?] {
    var waiting: [String: Int] = [:]
    for (index, message) in messages.enumerated() {
      let reply = connection.replySubject()
      waiting[reply] = index
      connection.publish(message.subject, reply: reply, headers: message.headers, payload: message.payload)
    }
    try connection.flush(deadline: deadline)
    var acks = [PublishAck?](repeating: nil, count: messages.count)
    while !waiting.isEmpty, !stop() {
      let now = Clock.monotonicSeconds()
      guard now < deadline else { break }
      guard let reply = try connection.nextReply(deadline: min(deadline, now + 0.1)) else { continue }
      guard let index = waiting.removeValue(forKey: reply.subject) else { continue }
      acks[index] = PublishAck.parse(reply, stream: stream)
    }
    return acks
  }

  /// A JetStream API request (`$JS.API.<verb>`) and its JSON answer.
  package func api(_ verb: String, _ body: JSONValue, deadline: Double) throws(NATSError) -> JSONValue {
    var payload: [UInt8] = []
    body.encodeJSON(into: &payload)
    let answer = try connection.request("$JS.API." + verb, payload: payload, deadline: deadline)
    if answer.status == 503 { throw NATSError(.refused, "JetStream is not enabled on the server (no responders)") }
    guard let value = try? JSONReader.parse(answer.payload, maxDepth: 64) else {
      throw NATSError(.protocolError, "the answer to \(verb) is not JSON")
    }
    return value
  }

  func apiError(_ verb: String, _ error: JSONValue) -> NATSError {
    let text = connection.redacted(error["description"]?.stringValue ?? "unknown error")
    return NATSError(.refused, "\(verb): \(text) (err_code \(error["err_code"]?.intValue ?? 0))")
  }
}

/// Delays between reconnects: doubling from `first` up to `limit`, each with jitter (half to all of it).
package struct NATSBackoff: Sendable {
  package var first = 0.1
  package var limit = 5.0
  private var failures = 0

  package init(first: Double = 0.1, limit: Double = 5.0) {
    self.first = first
    self.limit = limit
  }

  package mutating func reset() { failures = 0 }

  /// The next delay in seconds.
  package mutating func next() -> Double {
    let base = min(limit, first * Double(1 << min(failures, 30)))
    failures += 1
    return base * Double.random(in: 0.5...1.0)
  }
}
