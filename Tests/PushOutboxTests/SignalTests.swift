import Foundation
import Testing

@testable import OutboxCommandLine
@testable import OutboxDelivery
@testable import OutboxDomain
@testable import OutboxJSON
@testable import OutboxJSONRPC
@testable import OutboxServer
@testable import OutboxStore
@testable import OutboxSupport
@testable import OutboxTransport

/// The signal policy over the real binary: SIGHUP and SIGQUIT end the process like SIGTERM, and
/// SIGTERM ends a server blocked on a stdout nobody reads. (SIGUSR1 is tested in
/// Tests/fault/test_signals.py: children of the Swift test runner inherit it blocked.)
@Suite struct SignalTests {
  static func save(_ id: Int, _ name: String) -> String {
    EndToEndTests.request(id, "saveCustomEvent", #"{"name":"\#(name)","properties":{"n":\#(id)}}"#)
  }

  /// The names of the items a fresh process finds in `store`.
  func recoveredNames(_ store: URL) throws -> [JSONValue?] {
    let run = try runBinary(
      ["--store", store.path], input: Array((EndToEndTests.request(1, "flushPending") + "\n").utf8))
    #expect(run.status == 0, "\(run.stderr)")
    let reply = try JSONReader.parse(try #require(lines(run.stdout).first))
    return (reply.at("result.items")?.arrayValue ?? []).map { $0["name"] }
  }

  /// True when the store holds a snapshot (the periodic one is an hour away, so only the final one).
  func hasCheckpoint(_ store: URL) -> Bool {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: store.path)) ?? []
    return names.contains("checkpoint.json")
  }

  @Test(arguments: [SIGHUP, SIGQUIT])
  func stoppingSignalEndsLikeSigterm(_ sig: Int32) throws {
    let store = Paths.temporaryDirectory()
    let server = try ServerProcess(["--store", store.path, "--snapshot-interval", "3600"])
    server.send(Self.save(1, "kept"))
    #expect(server.readLine() != nil)
    server.kill(sig)
    let status = server.waitForExit(timeout: 30)
    try #require(status == 0, "signal \(sig): \(server.stderrText)")
    #expect(!server.terminatedBySignal)
    #expect(hasCheckpoint(store))
    #expect(server.readToEnd(timeout: 5).isEmpty)  // nothing after the signal, no torn line
    #expect(try recoveredNames(store) == [.string("kept")])
  }

  @Test func sigquitPrintsNoBacktrace() throws {
    let server = try ServerProcess(["--memory"])
    server.send(EndToEndTests.request(1, "status"))
    #expect(server.readLine() != nil)
    server.kill(SIGQUIT)
    try #require(server.waitForExit(timeout: 30) == 0)
    #expect(!server.stderrText.contains("Backtrace"), "\(server.stderrText)")
  }

  #if os(Linux)
  @Test func sigtermEndsAServerBlockedOnAFullStdout() throws {
    let store = Paths.temporaryDirectory()
    let server = try ServerProcess(["--store", store.path, "--snapshot-interval", "3600"])
    server.send(Self.save(1, "before-block"))
    #expect(server.readLine() != nil)
    // The server widened its stdout pipe at start (to 1 MiB); back to the 64 KiB the batch below
    // fills several times over.
    _ = fcntl(server.stdoutFD, 1031 /* F_SETPIPE_SZ */, 65536)
    // One batch whose replies are several times the pipe's capacity, never read.
    let batch = (2..<1002).map { EndToEndTests.request($0, "status") }.joined(separator: ",")
    server.send("[" + batch + "]")
    let capacity = Int(fcntl(server.stdoutFD, 1032 /* F_GETPIPE_SZ */))
    var queued: Int32 = 0
    for _ in 0..<3000 where Int(queued) < capacity - 4096 {  // wait until the pipe is full
      usleep(10_000)
      _ = ioctl(server.stdoutFD, UInt(FIONREAD), &queued)
    }
    #expect(Int(queued) >= capacity - 4096, "stdout never filled: \(queued) of \(capacity)")
    server.kill(SIGTERM)
    let status = server.waitForExit(timeout: 30)
    try #require(status == 0, "\(server.stderrText)")
    #expect(!server.terminatedBySignal)
    #expect(try recoveredNames(store) == [.string("before-block")])
  }
  #endif
}
