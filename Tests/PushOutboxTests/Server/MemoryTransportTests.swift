import Foundation
import Testing

@testable import OutboxJSON
@testable import OutboxServer
@testable import OutboxStore
@testable import OutboxSupport
@testable import OutboxTransport

/// The real loop (`RequestLoop`) over the in-memory transport: framing across chunks, bursts, the
/// periodic tick and the one writer, with no process and no pipe.
@Suite struct MemoryTransportTests {
  private func loop(chunkSize: Int) -> RequestLoop<MemoryTransport> {
    var config = Configuration()
    config.memory = true
    config.fixedClock = ISO8601.parseDateTime("2026-01-01T00:00:00.000Z")
    config.idSeed = 1
    let server = Server(service: Service(config: config, log: Log(level: .error)))
    return RequestLoop(server: server, transport: MemoryTransport(chunkSize: chunkSize))
  }

  private func line(_ id: Int?, _ method: String, _ params: String) -> String {
    let idPart = id.map { "\"id\":\($0)," } ?? ""
    return #"{"jsonrpc":"2.0",\#(idPart)"method":"\#(method)","params":\#(params)}"#
  }

  /// Ids of every reply object in `output` (batch replies flattened), in order.
  private func replyIDs(_ output: [UInt8]) throws -> [Int64] {
    var ids: [Int64] = []
    for text in String(decoding: output, as: UTF8.self).split(separator: "\n") {
      let value = try JSONReader.parse(Array(text.utf8), maxDepth: 100)
      let objects: [JSONValue] = if case .array(let items) = value { items } else { [value] }
      for object in objects {
        #expect(object["error"] == nil, "\(object)")
        ids.append(try #require(object["id"]?.intValue))
      }
    }
    return ids
  }

  @Test(arguments: [1, 7, 1 << 16]) func aBurstANotificationAndABatchGetOneReplyPerRequest(chunkSize: Int) throws {
    var loop = loop(chunkSize: chunkSize)
    var rng = SeededGenerator(seed: UInt64(chunkSize))
    let saves = Int.random(in: 20...80, using: &rng)
    var input = (1...saves).map { line($0, "saveCustomEvent", #"{"name":"e\#($0)","user":{"externalId":"u"}}"#) }
    input.append(line(nil, "saveCustomEvent", #"{"name":"note","user":{"externalId":"u"}}"#))  // no reply, ever
    input.append(
      "[" + line(1001, "saveCustomAttribute", #"{"key":"k","value":1,"user":{"externalId":"u"}}"#) + ","
        + line(nil, "status", "{}") + "," + line(1002, "status", "{}") + "]")
    input.append(line(2000, "status", "{}"))
    loop.push(Array((input.joined(separator: "\n") + "\n").utf8))
    #expect(loop.runUntilIdle() == nil)
    let ids = try replyIDs(loop.takeOutput())
    #expect(ids == Array(1...Int64(saves)) + [1001, 1002, 2000])
    // Every save was taken: the burst's saves, the notification and the batch's attribute.
    #expect(loop.server.service.store.count == saves + 2)
    // Nothing more to say: an idle turn writes nothing, and the end of input stops the loop.
    #expect(loop.runUntilIdle() == nil)
    #expect(loop.takeOutput().isEmpty)
  }

  @Test func endOfInputStopsTheLoopAfterTheLastReply() throws {
    var transport = MemoryTransport(chunkSize: 5)
    transport.push(Array((line(1, "status", "{}") + "\n" + line(2, "status", "{}")).utf8))  // no final newline
    transport.close()
    var config = Configuration()
    config.memory = true
    var loop = RequestLoop(
      server: Server(service: Service(config: config, log: Log(level: .error))), transport: transport)
    #expect(loop.run() == .endOfInput)
    #expect(try replyIDs(loop.transport.output) == [1, 2])
  }
}
