package import OutboxJSON
import OutboxSupport

/// What a connection is opened with.
package struct NATSOptions: Sendable {
  package var address: NATSAddress
  package var auth: NATSAuth?
  /// Plain text to a host that is not loopback (`--nats-allow-plaintext`).
  package var allowPlaintext = false
  package var name = "push-outbox"
  package var connectSeconds = 5.0

  package init(address: NATSAddress, auth: NATSAuth? = nil) {
    self.address = address
    self.auth = auth
  }
}

/// One connection to a NATS server (client protocol, docs.nats.io reference/protocols/client):
/// INFO, then CONNECT with `headers` and `no_responders`, then one wildcard subscription
/// `_INBOX.<random>.*` that receives every reply. Synchronous: each call waits with a deadline.
/// Every error text passes through the secret's redaction; the CONNECT line is never logged.
package final class NATSConnection {
  package let options: NATSOptions
  /// The server's INFO object.
  package private(set) var info: JSONValue = .null
  private let socket: NATSSocket
  private var parser = NATSParser()
  private var out: [UInt8] = []
  private var chunk: [UInt8] = []
  private let inbox: String
  private var nextReply = 0
  private static let inboxSid = "1"
  private var nextSid = 2
  /// Messages to other subscriptions (`subscribe`), in arrival order, at most `maxQueued` of them
  /// and `maxQueuedBytes` of payload: a server that floods never grows this past a fixed budget.
  private var queued: [NATSMessage] = []
  private var queuedBytes = 0
  /// The subscriptions made by `subscribe` and not yet ended: messages for any other sid (never
  /// made, or ended) are dropped as they arrive.
  private var live: Set<String> = []
  /// Messages dropped: for no live subscription, or past the queue's budget.
  package private(set) var dropped = 0
  static let maxQueued = 4096
  static let maxQueuedBytes = 16 << 20
  /// The largest `max_payload` a server may announce: the parser's own limit (NATS allows 64 MiB).
  static let maxAnnouncedPayload = NATSParser().maxPayload

  /// Connects, authenticates and subscribes to its inbox before `connectSeconds` pass.
  package init(_ options: NATSOptions) throws(NATSError) {
    guard options.address.isLoopback || options.allowPlaintext else {
      throw NATSError(
        .refused,
        "\(options.address) is not loopback and TLS is not supported yet: reach the cluster through a local leaf node"
          + " on 127.0.0.1, or give --nats-allow-plaintext")
    }
    self.options = options
    let deadline = Clock.monotonicSeconds() + options.connectSeconds
    socket = try NATSSocket(host: options.address.host, port: options.address.port, deadline: deadline)
    inbox = "_INBOX." + Self.token(22)
    do throws(NATSError) {
      try handshake(deadline: deadline)
    } catch {
      socket.close()
      throw error
    }
  }

  package func close() { socket.close() }

  /// The largest payload the server takes (INFO `max_payload`; NATS's default 1 MiB when it says
  /// none). The handshake refuses a server whose value is not in 1...`maxAnnouncedPayload`.
  package var maxPayload: Int { Int(info["max_payload"]?.intValue ?? 1 << 20) }

  /// INFO's `max_payload`, when present, must be a whole number of bytes in 1...64 MiB: 0 or a
  /// negative value would make every message too large (every item a dead letter), an absurd one
  /// would let a message past the parser's limit.
  package static func checkMaxPayload(_ info: JSONValue) throws(NATSError) {
    guard let field = info["max_payload"] else { return }
    guard let value = field.intValue, value >= 1, value <= Int64(maxAnnouncedPayload) else {
      var text: [UInt8] = []
      field.encodeJSON(into: &text)
      throw NATSError(
        .refused,
        "NATS protocol: the server's INFO announces max_payload \(String(decoding: text.prefix(40), as: UTF8.self)),"
          + " not a size in 1...\(maxAnnouncedPayload) bytes (a misconfigured or hostile server); nothing is published")
    }
  }

  private func handshake(deadline: Double) throws(NATSError) {
    guard let first = try nextEvent(deadline: deadline, handlePings: false) else {
      throw NATSError(.timeout, "no INFO from \(options.address) before the deadline (NATS slow or not NATS)")
    }
    guard case .info(let text) = first else { throw NATSError(.protocolError, "the server did not start with INFO") }
    guard let parsed = try? JSONReader.parse(text, maxDepth: 16) else {
      throw NATSError(.protocolError, "the server's INFO is not JSON")
    }
    info = parsed
    try Self.checkMaxPayload(parsed)
    if parsed["tls_required"]?.boolValue == true {
      throw NATSError(.refused, "the server requires TLS, which is not supported yet: use a loopback leaf node")
    }
    guard parsed["headers"]?.boolValue == true else {
      throw NATSError(.refused, "the server does not support headers (NATS 2.2 or later is needed)")
    }
    var line = Array("CONNECT ".utf8)
    connectObject.encodeJSON(into: &line)
    line.append(contentsOf: "\r\nPING\r\nSUB \(inbox).* \(Self.inboxSid)\r\n".utf8)
    try socket.send(line, deadline: deadline)
    while true {
      switch try nextEvent(deadline: deadline, handlePings: true) {
      case .pong: return
      case .error(let text): throw serverError(text)
      case nil: throw NATSError(.timeout, "no answer to CONNECT from \(options.address)")
      default: continue
      }
    }
  }

  private var connectObject: JSONValue {
    var members = [
      JSONMember("verbose", .bool(false)), JSONMember("pedantic", .bool(false)),
      JSONMember("tls_required", .bool(false)), JSONMember("name", .string(options.name)),
      JSONMember("lang", .string("swift")), JSONMember("version", .string("0.1")),
      JSONMember("protocol", .int(1)), JSONMember("headers", .bool(true)), JSONMember("no_responders", .bool(true)),
    ]
    switch options.auth {
    case .token(let secret): members.append(JSONMember("auth_token", .string(secret.value)))
    case .user(let user, let secret):
      members.append(JSONMember("user", .string(user)))
      members.append(JSONMember("pass", .string(secret.value)))
    case nil: break
    }
    return .object(members)
  }

  // MARK: - Sending

  /// Queues a PUB (no headers) or HPUB; `flush` sends what is queued.
  package func publish(_ subject: String, reply: String? = nil, headers: [NATSHeader] = [], payload: [UInt8]) {
    let replyPart = reply.map { " " + $0 } ?? ""
    if headers.isEmpty {
      out.append(contentsOf: "PUB \(subject)\(replyPart) \(payload.count)\r\n".utf8)
    } else {
      var block = Array("NATS/1.0\r\n".utf8)
      for header in headers { block.append(contentsOf: "\(header.name): \(header.value)\r\n".utf8) }
      block.append(contentsOf: [13, 10])
      out.append(contentsOf: "HPUB \(subject)\(replyPart) \(block.count) \(block.count + payload.count)\r\n".utf8)
      out.append(contentsOf: block)
    }
    out.append(contentsOf: payload)
    out.append(contentsOf: [13, 10])
  }

  /// A fresh reply subject under the connection's inbox.
  package func replySubject() -> String {
    nextReply += 1
    return inbox + "." + String(nextReply)
  }

  /// Subscribes to `subject` (for pull consumers and watchers); messages come from `nextMessage`.
  package func subscribe(_ subject: String, queue: String? = nil) -> String {
    let sid = String(nextSid)
    nextSid += 1
    live.insert(sid)
    out.append(contentsOf: "SUB \(subject)\(queue.map { " " + $0 } ?? "") \(sid)\r\n".utf8)
    return sid
  }

  /// Ends a subscription: what is queued for it, and what still arrives for it, is dropped.
  package func unsubscribe(_ sid: String) {
    live.remove(sid)
    if queued.contains(where: { $0.sid == sid }) {
      dropped += queued.count { $0.sid == sid }
      queued.removeAll { $0.sid == sid }
      queuedBytes = queued.reduce(0) { $0 + $1.payload.count }
    }
    out.append(contentsOf: "UNSUB \(sid)\r\n".utf8)
  }

  /// Keeps a message for a live subscription within the budget; drops anything else.
  private func enqueue(_ message: NATSMessage) {
    guard live.contains(message.sid), queued.count < Self.maxQueued,
      queuedBytes + message.payload.count <= Self.maxQueuedBytes
    else {
      dropped += 1
      return
    }
    queued.append(message)
    queuedBytes += message.payload.count
  }

  /// Sends everything queued before `deadline`.
  package func flush(deadline: Double) throws(NATSError) {
    guard !out.isEmpty else { return }
    defer { out.removeAll(keepingCapacity: true) }
    try socket.send(out, deadline: deadline)
  }

  // MARK: - Receiving

  /// A request: publishes with a fresh reply subject and waits for the one answer.
  package func request(
    _ subject: String, headers: [NATSHeader] = [], payload: [UInt8], deadline: Double
  ) throws(NATSError) -> NATSMessage {
    let reply = replySubject()
    publish(subject, reply: reply, headers: headers, payload: payload)
    try flush(deadline: deadline)
    while let message = try nextReply(deadline: deadline) {
      if message.subject == reply { return message }
    }
    throw NATSError(.timeout, "no answer on \(subject) before the deadline")
  }

  /// The next message on the inbox, nil when `deadline` passed first. PINGs are answered on the way.
  package func nextReply(deadline: Double) throws(NATSError) -> NATSMessage? {
    while let event = try nextEvent(deadline: deadline, handlePings: true) {
      switch event {
      case .message(let message) where message.sid == Self.inboxSid: return message
      case .message(let message): enqueue(message)
      case .error(let text): throw serverError(text)
      default: continue
      }
    }
    return nil
  }

  /// The next message on the `subscribe` subscription `sid`, nil when `deadline` passed first.
  /// Messages of other subscriptions wait in arrival order.
  package func nextMessage(sid: String, deadline: Double) throws(NATSError) -> NATSMessage? {
    if let index = queued.firstIndex(where: { $0.sid == sid }) {
      let message = queued.remove(at: index)
      queuedBytes -= message.payload.count
      return message
    }
    while let event = try nextEvent(deadline: deadline, handlePings: true) {
      switch event {
      case .message(let message) where message.sid == sid: return message
      case .message(let message) where message.sid != Self.inboxSid: enqueue(message)
      case .error(let text): throw serverError(text)
      default: continue
      }
    }
    return nil
  }

  /// A fresh subject outside the reply inbox, for a subscription of its own (a pull request's replies,
  /// whose messages keep their stream subjects and are told apart by their subscription id).
  package func newInbox() -> String { "_INBOX." + Self.token(22) }

  private func nextEvent(deadline: Double, handlePings: Bool) throws(NATSError) -> NATSEvent? {
    while true {
      let event: NATSEvent?
      do throws(NATSProtocolError) { event = try parser.next() } catch {
        throw NATSError(.protocolError, redacted(error.description))
      }
      if let event {
        if handlePings, event == .ping {
          try socket.send(Array("PONG\r\n".utf8), deadline: deadline)
          continue
        }
        return event
      }
      guard try socket.receive(deadline: deadline, into: &chunk) else { return nil }
      parser.append(chunk)
    }
  }

  private func serverError(_ text: String) -> NATSError {
    let clean = redacted(text)
    let lower = clean.lowercased()
    // Credentials and permissions do not change by retrying; the rest (stale connection, slow
    // consumer, payload violation after a server change) ends this connection only.
    let kind: NATSError.Kind =
      lower.contains("authorization") || lower.contains("authentication") || lower.contains("permissions")
      ? .auth : .closed
    return NATSError(kind, "the server answered -ERR '\(clean)'")
  }

  package func redacted(_ text: String) -> String { options.auth?.secret.redact(text) ?? text }

  /// `count` random letters and digits.
  static func token(_ count: Int) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
    var generator = SystemRandomNumberGenerator()
    return String((0..<count).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
  }
}
