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

/// Signals, closed pipes, inherited descriptor flags, and the snapshot across restarts.
@Suite struct LifecycleTests {
  static func save(_ id: Int, _ name: String) -> String {
    EndToEndTests.request(id, "saveCustomEvent", #"{"name":"\#(name)","properties":{"n":\#(id),"flag":true}}"#)
  }

  func flushAll(store: URL) throws -> [JSONValue] {
    let run = try runBinary(
      ["--store", store.path], input: Array((EndToEndTests.request(1, "flushPending") + "\n").utf8))
    #expect(run.status == 0, "\(run.stderr)")
    let reply = try JSONReader.parse(try #require(lines(run.stdout).first))
    return reply.at("result.items")?.arrayValue ?? []
  }

  @Test func sigtermFinishesTakesASnapshotAndExitsZero() throws {
    let store = Paths.temporaryDirectory()
    let server = try ServerProcess(["--store", store.path, "--snapshot-interval", "3600"])
    for n in 1...3 { server.send(Self.save(n, "e\(n)")) }
    for _ in 1...3 { #expect(server.readLine() != nil) }
    server.kill(SIGTERM)
    #expect(server.waitForExit() == 0)
    #expect(!server.terminatedBySignal)
    let items = try flushAll(store: store)
    #expect(items.map { $0["name"] } == [.string("e1"), .string("e2"), .string("e3")])
    #expect(items.map { $0.at("properties.n") } == [.int(1), .int(2), .int(3)])
    #expect(items.allSatisfy { $0.at("properties.flag") == .bool(true) })
    #expect(try flushAll(store: store).isEmpty)
  }

  @Test func sigintIsGracefulToo() throws {
    let store = Paths.temporaryDirectory()
    let server = try ServerProcess(["--store", store.path])
    server.send(Self.save(1, "x"))
    #expect(server.readLine() != nil)
    server.kill(SIGINT)
    #expect(server.waitForExit() == 0)
    #expect(try flushAll(store: store).count == 1)
  }

  @Test func periodicSnapshotIsWrittenWhileServingWithMode0600() throws {
    let store = Paths.temporaryDirectory()
    let server = try ServerProcess(["--store", store.path, "--snapshot-interval", "0.05"])
    server.send(Self.save(1, "periodic"))
    #expect(server.readLine() != nil)
    let file = store.appendingPathComponent("checkpoint.json").path
    var found = false
    for _ in 0..<200 where !found {
      usleep(10_000)
      found = FileManager.default.fileExists(atPath: file)
    }
    #expect(found)
    for name in try FileManager.default.contentsOfDirectory(atPath: store.path) {
      let mode = try FileManager.default.attributesOfItem(atPath: store.path + "/" + name)[.posixPermissions] as? Int
      #expect(mode == 0o600, "\(name)")
    }
    var reported: JSONValue? = nil
    for n in 0..<200 where reported == nil {  // the loop collects the background write's outcome
      server.send(EndToEndTests.request(n + 2, "status"))
      reported = try JSONReader.parse(try #require(server.readLine())).at("result.lastSnapshotAt")
      if reported == .null { reported = nil; usleep(10_000) }
    }
    #expect(reported?.stringValue != nil)
    server.kill(SIGKILL)
    _ = server.waitForExit()
    #expect(try flushAll(store: store).map { $0["name"] } == [.string("periodic")])
  }

  @Test func closedStdoutEndsCleanlyAfterASnapshot() throws {
    let store = Paths.temporaryDirectory()
    let server = try ServerProcess(["--store", store.path, "--snapshot-interval", "3600"])
    server.send(Self.save(1, "before-epipe"))
    #expect(server.readLine() != nil)
    server.closeOutput()
    for n in 2...50 { server.send(Self.save(n, "after")) }
    let status = server.waitForExit(timeout: 60)  // a hang detector, generous for a loaded machine
    #expect(status == 0)
    #expect(!server.terminatedBySignal)
    #expect(try flushAll(store: store).first?["name"] == .string("before-epipe"))
  }

  @Test func inheritedNonBlockingFlagsAreLeftAlone() throws {
    for nonBlocking in [false, true] {
      var fds: [Int32] = [0, 0]
      #expect(pipe(&fds) == 0)
      if nonBlocking { _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK) }
      let before = fcntl(fds[0], F_GETFL)
      let process = Process()
      process.executableURL = URL(fileURLWithPath: Paths.binary)
      process.arguments = EndToEndTests.fixed
      process.standardInput = FileHandle(fileDescriptor: fds[0], closeOnDealloc: false)
      let out = Pipe()
      process.standardOutput = out
      try process.run()
      let line = Array((EndToEndTests.request(1, "status") + "\n").utf8)
      _ = line.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }
      let reply = out.fileHandleForReading.availableData
      #expect(String(decoding: reply, as: UTF8.self).contains("\"id\":1"))
      #expect(fcntl(fds[0], F_GETFL) == before, "nonBlocking=\(nonBlocking)")
      close(fds[1])
      process.waitUntilExit()
      #expect(process.terminationStatus == 0)
      close(fds[0])
    }
  }

  @Test func corruptSnapshotStopsStartupAndIsLeftUntouched() throws {
    let store = Paths.temporaryDirectory()
    let file = store.appendingPathComponent("snapshot.json")
    try Data(
      "{\"format\":\"push-outbox-snapshot\",\"version\":1,\"coversSeq\":1,\"nextSeq\":2,\"items\":1}\n{\"id\":".utf8
    ).write(to: file)
    let before = try Data(contentsOf: file)
    let run = try runBinary(["--store", store.path], input: Array((EndToEndTests.request(1, "status") + "\n").utf8))
    #expect(run.status == 1)
    // Not the status reply: only the start-up failure line (-32007 store_unavailable, id null).
    let reply = try JSONReader.parse(try #require(lines(run.stdout).first))
    #expect(lines(run.stdout).count == 1 && reply["id"] == .null && reply.at("error.code") == .int(-32007))
    #expect(run.stderr.contains("corrupt"))
    #expect(try Data(contentsOf: file) == before)
  }

  @Test func newerSnapshotFormatIsRefusedWithExitCode2() throws {
    let store = Paths.temporaryDirectory()
    let file = store.appendingPathComponent("snapshot.json")
    try Data("{\"format\":\"push-outbox-snapshot\",\"version\":99}\n{}\n{}\n".utf8).write(to: file)
    let run = try runBinary(["--store", store.path], input: [])
    #expect(run.status == 2)
    #expect(run.stderr.contains("newer"))
  }
}
