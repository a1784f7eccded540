@testable import OutboxCommandLine
@testable import OutboxDelivery
@testable import OutboxDomain
@testable import OutboxJSON
@testable import OutboxJSONRPC
@testable import OutboxServer
@testable import OutboxStore
@testable import OutboxSupport
@testable import OutboxTransport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs lines through the real loop over a memory transport, in this process, and returns the
/// output lines.
final class InProcessServer {
  private var loop: RequestLoop<MemoryTransport>
  var server: Server { loop.server }

  init(_ configure: (inout Configuration) -> Void = { _ in }) {
    var config = Configuration()
    config.memory = true
    config.fixedClock = ISO8601.parseDateTime("2026-01-01T00:00:00.000Z")
    config.idSeed = 1
    configure(&config)
    loop = RequestLoop(
      server: Server(service: Service(config: config, log: Log(level: .error))), transport: MemoryTransport())
  }

  var service: Service { server.service }

  /// What the loop would have slept, at most, at its last wait for input.
  var lastTimeoutMs: Int32? { loop.lastTimeoutMs() }

  /// Sends raw lines (each framed as the transport would) and returns the reply lines, once every
  /// long call they started has been answered.
  func send(_ lines: String...) -> [String] {
    var replies = sendWithoutWaiting(lines)
    while !service.longCalls.isEmpty { replies += turn() }
    return replies
  }

  /// Sends raw lines and returns what the loop wrote before it would wait: long calls may be running.
  func sendWithoutWaiting(_ lines: [String]) -> [String] {
    loop.push(Array(lines.map { $0 + "\n" }.joined().utf8))
    _ = loop.runUntilIdle()
    return Self.lines(loop.takeOutput())
  }

  /// One idle turn of the loop (periodic work, long calls' steps) after a short wait; the lines written.
  func turn() -> [String] {
    usleep(1000)
    _ = loop.runUntilIdle()
    return Self.lines(loop.takeOutput())
  }

  private static func lines(_ bytes: [UInt8]) -> [String] {
    let text = String(decoding: bytes, as: UTF8.self)
    return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
  }

  /// Sends one line and parses the single reply.
  func call(_ line: String) throws -> JSONValue {
    let replies = send(line)
    guard replies.count == 1 else { throw TestFailure("expected one reply, got \(replies.count): \(replies)") }
    return try JSONReader.parse(replies[0])
  }

  func request(_ method: String, _ params: String = "{}", id: Int = 1) throws -> JSONValue {
    try call(#"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)","params":\#(params)}"#)
  }
}

struct TestFailure: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

extension JSONValue {
  /// `value["a"]?["b"]` style access through a dotted path: `value.at("error.code")`.
  func at(_ path: String) -> JSONValue? {
    var current: JSONValue? = self
    for part in path.split(separator: ".") {
      if let index = Int(part), case .array(let items)? = current {
        current = index < items.count ? items[index] : nil
      } else {
        current = current?[String(part)]
      }
    }
    return current
  }
}

extension Service {
  /// `openDisk()`, waiting out one race that exists only in the test process: a child another test
  /// forks at that moment shares the previous instance's lock until its exec closes it.
  func openDiskInTests() throws {
    for _ in 0..<400 {
      do {
        try openDisk()
        return
      } catch {
        guard error.exit == .locked else { throw error }
        usleep(5000)
      }
    }
    try openDisk()
  }
}
