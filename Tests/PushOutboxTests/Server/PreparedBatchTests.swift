import Foundation
import Testing

@testable import OutboxCommandLine
@testable import OutboxJSON
@testable import OutboxServer
@testable import OutboxStore
@testable import OutboxSupport

/// `--threads 2` prepares fast saves on a second thread (`SavePath`). Whatever the input,
/// the replies, the stored items and the journal must be byte for byte those of `--threads 1`: the
/// model here is the one-thread loop, which `FastSaveTests` in turn holds to the general path.
@Suite struct PreparedBatchTests {
  static let request = #"{"jsonrpc":"2.0","id":ID,"method":"METHOD","params":PARAMS}"#

  /// Lines of every kind the loop meets, fast saves most often.
  static func line(_ n: Int, _ random: inout SeededGenerator) -> String {
    let user = ["", #","user":{"externalId":"u\#(n % 7)"}"#, #","user":{ "email" : "a@b.co" }"#][
      Int.random(
        in: 0..<3, using: &random)]
    let fast = #"{"name":"e\#(n)","properties":{"n":\#(n),"ok":true,"tags":["a","b"]}\#(user)}"#
    switch Int.random(in: 0..<96, using: &random) {
    case 0..<70: return call(n, "saveCustomEvent", fast)
    case 70..<78: return FastSaveTests.lines.randomElement(using: &random)!
    case 78..<82: return call(n, "saveCustomAttribute", #"{"key":"k\#(n)","value":\#(n),"user":{"externalId":"u"}}"#)
    case 82..<85: return call(n, "flushPending", #"{"max":\#(Int.random(in: 1...5, using: &random))}"#)
    case 85..<87: return call(n, "status", "{}")
    case 87..<90: return #"{"jsonrpc":"2.0","id":\#(n),"method":"saveCustomEvent","params":{"name":"#  // unreadable
    case 90..<92: return String(repeating: "x", count: 300)  // over --max-line-bytes
    case 92..<94: return "[" + call(n, "saveCustomEvent", fast) + "," + call(n + 1, "status", "{}") + "]"
    default: return call(n, "saveCustomEvent", #"{"name":"e\#(n)","id":"c\#(n % 5)"}"#)  // a client id
    }
  }

  static func call(_ id: Int, _ method: String, _ params: String) -> String {
    request.replacing("ID", with: String(id)).replacing("METHOD", with: method).replacing("PARAMS", with: params)
  }

  struct Outcome: Equatable {
    var output: [String]
    var items: [[UInt8]]
    var journal: [UInt8]
    /// Saves the second thread prepared and the loop stored.
    var prepared: Int
  }

  /// Every line in one push (so reads carry hundreds of messages), through the real loop, with its
  /// store in `store` (made empty first: `status` shows the path, so both runs use the same).
  static func run(_ lines: [String], threads: Int, journal: Bool, store: URL) throws -> Outcome {
    try? FileManager.default.removeItem(at: store)
    try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
    let server = InProcessServer {
      $0.threads = threads
      $0.maxLineBytes = 256
      $0.preparerHeadStart = true
      if journal {
        $0.memory = false
        $0.storePath = store.path
        $0.snapshotInterval = 3600
      }
    }
    if journal { try server.service.openDiskInTests() }
    let output = server.send(lines.joined(separator: "\n")).joined(separator: "\n")
    server.service.finish()
    let held = server.service.store.items
    let items = held.table.rows.filter { !held.table.has(.removed, $0) }.map { row in
      var out: [UInt8] = []
      held.item(row: row).encodeJSON(into: &out)
      return out
    }
    let records = journal ? FastSaveTests.journalBytes(store) : []
    return Outcome(
      output: output.split(separator: "\n").map(String.init), items: items, journal: records,
      prepared: server.server.savePath.preparedSaves)
  }

  /// Seeded random inputs; a quarter of them end in `shutdown` and more saves, or in `exit`
  /// somewhere in the middle.
  @Test(arguments: 0..<12) func twoThreadsAnswerAndStoreWhatOneDoes(seed: UInt64) throws {
    var random = SeededGenerator(seed: seed)
    let count = Int.random(in: 200...1500, using: &random)
    var lines: [String] = []
    for n in 0..<count { lines.append(Self.line(n * 2, &random)) }
    switch seed % 4 {
    case 1: lines.insert(Self.call(1, "shutdown", "{}"), at: Int.random(in: 0..<count, using: &random))
    case 2: lines.insert(#"{"jsonrpc":"2.0","method":"exit"}"#, at: Int.random(in: count / 2..<count, using: &random))
    default: break
    }
    let parent = Paths.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: parent) }
    for journal in [false, true] {
      let store = parent.appendingPathComponent("store")
      let one = try Self.run(lines, threads: 1, journal: journal, store: store)
      let two = try Self.run(lines, threads: 2, journal: journal, store: store)
      #expect(one.prepared == 0)
      // After an early `shutdown` nothing is stored from a prepared save; after `exit` nothing is,
      // and the thread may have taken only messages after it (it starts from the end).
      if seed % 4 == 0 || seed % 4 == 3 {
        #expect(two.prepared > 0, "seed \(seed): the second thread prepared nothing, so this tests nothing")
      }
      let differ = one.output.indices.first { $0 >= two.output.count || one.output[$0] != two.output[$0] }
      #expect(
        two.output == one.output,
        "seed \(seed), journal \(journal): replies differ at line \(differ ?? one.output.count): \(differ.map { $0 < two.output.count ? two.output[$0] : "(missing)" } ?? "(extra)") instead of \(differ.map { one.output[$0] } ?? "(nothing)")"
      )
      #expect(two.items == one.items, "seed \(seed), journal \(journal): stored items differ")
      #expect(two.journal == one.journal, "seed \(seed), journal \(journal): journals differ")
    }
  }

  /// 20,000 fast saves of the benchmark's kind in one push: the second thread takes a large part of
  /// each batch, and every reply, item and record is the one-thread loop's.
  @Test func aLongRunOfFastSaves() throws {
    let lines = (0..<20_000).map { n in
      Self.call(
        n, "saveCustomEvent", #"{"name":"e\#(n % 9)","properties":{"n":\#(n)},"user":{"externalId":"u\#(n % 97)"}}"#)
    }
    let parent = Paths.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: parent) }
    let store = parent.appendingPathComponent("store")
    let one = try Self.run(lines, threads: 1, journal: true, store: store)
    let two = try Self.run(lines, threads: 2, journal: true, store: store)
    #expect(two.prepared > 4_000)  // the head start alone gives it a quarter of each batch
    #expect(two.output == one.output)
    #expect(two.items == one.items)
    #expect(two.journal == one.journal)
  }
}
