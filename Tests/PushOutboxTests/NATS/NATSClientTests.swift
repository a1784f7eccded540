import Foundation
import Testing

@testable import OutboxJSON
@testable import OutboxNATS
@testable import OutboxSupport

/// The client against a real `nats-server -js` on 127.0.0.1 (skipped, with the reason, when none
/// is installed): JetStream stream creation and its comparison, publish acks with duplicates, no
/// responders, and the key-value operations leader election needs.
@Suite(.serialized) struct NATSClientTests {
  static let serverPath = ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"]
    .first { FileManager.default.isExecutableFile(atPath: $0) }

  final class Server {
    let process = Process()
    let directory: URL
    let port: UInt16

    init(path: String) throws {
      directory = Paths.temporaryDirectory()
      port = UInt16.random(in: 20_000...60_000)
      process.executableURL = URL(fileURLWithPath: path)
      process.arguments = ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", directory.path + "/js"]
      process.standardOutput = FileHandle.nullDevice
      process.standardError = FileHandle.nullDevice
      try process.run()
    }

    func connect() throws -> NATSConnection {
      let deadline = Clock.monotonicSeconds() + 10
      while true {
        do { return try NATSConnection(NATSOptions(address: NATSAddress(host: "127.0.0.1", port: port))) } catch {
          if Clock.monotonicSeconds() > deadline { throw error }
          usleep(50_000)
        }
      }
    }

    deinit {
      process.terminate()
      process.waitUntilExit()
      try? FileManager.default.removeItem(at: directory)
    }
  }

  static func deadline() -> Double { Clock.monotonicSeconds() + 10 }

  @Test(.enabled(if: serverPath != nil, "nats-server is not installed (apt-get install nats-server)"))
  func streamPublishAcksAndDuplicates() throws {
    let server = try Server(path: Self.serverPath!)
    let connection = try server.connect()
    defer { connection.close() }
    let js = JetStream(connection)
    let settings = StreamSettings(name: "T", subjects: ["T.*"], maxBytes: 1 << 20)
    try js.ensureStream(settings, deadline: Self.deadline())
    try js.ensureStream(settings, deadline: Self.deadline())  // the second time it exists and fits
    let message = OutgoingMessage(subject: "T.1", messageID: "id-1", payload: Array("{}".utf8))
    let acks = try js.publish([message, message], to: "T", deadline: Self.deadline())
    #expect(acks == [.stored(seq: 1, duplicate: false), .stored(seq: 1, duplicate: true)])
    let nobody = try js.publish(
      [OutgoingMessage(subject: "nowhere", messageID: "x", payload: [])], to: "T", deadline: Self.deadline())
    #expect(nobody == [.refused("no stream takes the subject (no responders)", code: 503)])
    var other = StreamSettings(name: "T", subjects: ["T.*", "U.*"], maxBytes: 1 << 20)
    other.duplicateWindowSeconds = 600
    #expect {
      try js.ensureStream(other, deadline: Self.deadline())
    } throws: {
      "\($0)".contains("duplicate_window is 120 s, less than 600 s; subjects lack U.*")
    }
  }

  @Test(.enabled(if: serverPath != nil, "nats-server is not installed (apt-get install nats-server)"))
  func keyValueCreateUpdateGet() throws {
    let server = try Server(path: Self.serverPath!)
    let connection = try server.connect()
    defer { connection.close() }
    let kv = NATSKeyValue(JetStream(connection), bucket: "leader")
    try kv.ensureBucket(ttlSeconds: 30, deadline: Self.deadline())
    #expect(try kv.get("owner", deadline: Self.deadline()) == nil)
    guard case .stored(let first) = try kv.create("owner", Array("a".utf8), deadline: Self.deadline()) else {
      Issue.record("create refused")
      return
    }
    guard case .conflict = try kv.create("owner", Array("b".utf8), deadline: Self.deadline()) else {
      Issue.record("a second create was accepted")
      return
    }
    guard
      case .stored(let second) = try kv.update("owner", Array("a2".utf8), revision: first, deadline: Self.deadline())
    else {
      Issue.record("update at the current revision refused")
      return
    }
    guard case .conflict = try kv.update("owner", Array("b".utf8), revision: first, deadline: Self.deadline()) else {
      Issue.record("update at a stale revision was accepted")
      return
    }
    #expect(try kv.get("owner", deadline: Self.deadline()) == .init(value: Array("a2".utf8), revision: second))
  }

  @Test(.enabled(if: serverPath != nil, "nats-server is not installed (apt-get install nats-server)"))
  func pullConsumerFetchAckAndNak() throws {
    let server = try Server(path: Self.serverPath!)
    let connection = try server.connect()
    defer { connection.close() }
    let js = JetStream(connection)
    try js.ensureStream(StreamSettings(name: "W", subjects: ["W.*"], maxBytes: 1 << 20), deadline: Self.deadline())
    let sent = (1...5).map {
      OutgoingMessage(subject: "W.\($0 % 2)", messageID: "m\($0)", payload: Array("p\($0)".utf8))
    }
    #expect(
      try js.publish(sent, to: "W", deadline: Self.deadline()).allSatisfy {
        if case .stored? = $0 { true } else { false }
      })
    let consumer = NATSPullConsumer(js, streamName: "W", name: "deliverer")
    try consumer.ensure(ackWaitSeconds: 30, maxDeliver: 5, deadline: Self.deadline())
    try consumer.ensure(ackWaitSeconds: 30, maxDeliver: 5, deadline: Self.deadline())  // found again
    let first = try consumer.fetch(batch: 10, expiresSeconds: 0.5, deadline: Self.deadline())
    #expect(first.map { String(decoding: $0.payload, as: UTF8.self) } == ["p1", "p2", "p3", "p4", "p5"])
    #expect(first.allSatisfy { $0.deliveries == 1 })
    for message in first.prefix(3) { consumer.ack(message) }
    for message in first.dropFirst(3) { consumer.nak(message, delaySeconds: 0) }
    try connection.flush(deadline: Self.deadline())
    let again = try consumer.fetch(batch: 10, expiresSeconds: 0.5, deadline: Self.deadline())
    #expect(again.map { String(decoding: $0.payload, as: UTF8.self) } == ["p4", "p5"])
    #expect(again.allSatisfy { $0.deliveries == 2 })
    for message in again { consumer.ack(message) }
    try connection.flush(deadline: Self.deadline())
    // A work-queue stream drops what was acked; an empty fetch ends on the server's 404/408.
    #expect(try consumer.fetch(batch: 10, expiresSeconds: 0.3, deadline: Self.deadline()).isEmpty)
    let info = try js.api("STREAM.INFO.W", .object([]), deadline: Self.deadline())
    #expect(info["state"]?["messages"]?.intValue == 0)
  }

  @Test func addressesAndLoopback() throws {
    #expect(try NATSAddress.parse("nats://127.0.0.1:4333").get() == NATSAddress(host: "127.0.0.1", port: 4333))
    #expect(try NATSAddress.parse("nats://[::1]").get() == NATSAddress(host: "::1", port: 4222))
    #expect(try NATSAddress.parse("nats://localhost").get().isLoopback)
    #expect(try !NATSAddress.parse("nats://10.0.0.1:4222").get().isLoopback)
    for bad in ["http://x", "nats://", "nats://h:0", "nats://h:x", "nats://u:p@h", "tls://h"] {
      #expect(throws: NATSError.self) { try NATSAddress.parse(bad).get() }
    }
    #expect(NATSSecret("tok3n").redact("a tok3n b tok3n") == "a <redacted> b <redacted>")
    #expect(Base64.decode("aGVsbG8=") == Array("hello".utf8))
    #expect(Base64.decode("a$") == nil)
  }
}
