// Fuzz target: sequences of store operations against the real store on disk (in-process, fixed clock,
// as StoreModelTests drives it) and a plain model of what must be held, built from the replies.
//
// Input: one byte per operation (at most 64), low nibble the operation, high nibble `a` its argument:
//   0–4, 14, 15  save: kind a % 3 (saveCustomEvent, saveCustomAttribute, saveUserAttribute), with a
//                user when a & 4, a longer body when a & 8
//   5   drain: flushPending {max: a % 5 + 1} without a lease (items removed); a ≥ 10: no max
//   6   lease: flushPending {leaseMs: (a / 4 + 1) * 1000, max: a % 4 + 1}
//   7   ackFlush the live lease (none live: an unknown flush id, which must be refused)
//   8   releaseFlush the live lease
//   9   expire: leases end as at clock + a * 500 ms
//   10  snapshot, settled: the disk tick as the loop would take it, waited for, then the files checked
//   11  snapshot left running while the next operations go on
//   12  reopen: clean finish (final snapshot and load.image), open again (from the image) with the
//       clock a * 500 ms later
//   13  crash: no final snapshot (a snapshot in flight is waited for, the journal dropped unclosed),
//       open again with the clock a * 500 ms later
// At most 4 reopens or crashes per input (later ones are taken as op 10).
//
// Checks: every reply is what the model expects (a save's seq is new; a drain or lease hands out the
// first free items in seq order with the model's delivery counts; ack and release counts); after every
// reopen the store holds exactly the model's items (seqs, ids, bodies, delivery counts) and leases;
// after every settled snapshot, read from the files independently (Files.swift): every held item's
// record (with its body) is in the segment file that owns its seq, which exists and checkpoint.json
// lists; the checkpoint's item count equals the held items those segments hold, its per-segment counts
// (when present) match, and its leases are the model's.
//
// The store's named kill points (KillPoint.swift) send SIGKILL to the process: they cannot be reached
// in-process; `crash` is a kill -9 between snapshots (Tests/model covers the kill points over the binary).
import FuzzSupport
import OutboxCommandLine
import OutboxDelivery
import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxServer
import OutboxStore
import OutboxSupport
import OutboxTransport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `PUSH_OUTBOX_FUZZ_VERBOSE=1` prints each operation and the model before it (to read a crash file).
let verbose = getenv("PUSH_OUTBOX_FUZZ_VERBOSE") != nil
let startClock: Int64 = 1_767_225_600_000  // 2026-01-01T00:00:00Z

struct Model {
  struct Item {
    var id: String
    var body: [UInt8]
    var deliveries: UInt32
  }
  struct Held {
    var flushId: String
    var seqs: [UInt64]
    var expiresAt: Int64
  }
  var items: [UInt64: Item] = [:]
  var lease: Held? = nil

  /// Pending items not under a lease, in seq order.
  var free: [UInt64] {
    let leased = Set(lease?.seqs ?? [])
    return items.keys.filter { !leased.contains($0) }.sorted()
  }

  mutating func endLease() {
    for seq in lease?.seqs ?? [] { items[seq]?.deliveries += 1 }
    lease = nil
  }
}

final class Session {
  let directory: String
  let input: [UInt8]
  var clock = startClock
  var service: Service
  var server: Server
  var model = Model()
  var requestID = 0
  var lastSeq: UInt64 = 0

  init(directory: String, input: [UInt8]) {
    self.directory = directory
    self.input = input
    (service, server) = Session.open(directory, clock: startClock, input: input)
  }

  static func open(_ directory: String, clock: Int64, input: [UInt8]) -> (Service, Server) {
    var config = Configuration(storePath: directory)
    config.fsync = .never
    config.snapshotInterval = 0.000_001  // every tick may snapshot
    config.fixedClock = clock
    config.idSeed = UInt64(clock)
    config.loadImageMinBytes = 0  // a reopen after a clean finish loads the rows from load.image
    let service = Service(config: config, log: Log(level: .error))
    do { try service.openDisk() } catch {
      fail("the store did not open: \(error.message)", input)
    }
    return (service, Server(service: service))
  }

  func request(_ method: String, _ params: String) -> JSONValue {
    requestID += 1
    let line = Array(#"{"jsonrpc":"2.0","id":\#(requestID),"method":"\#(method)","params":\#(params)}"#.utf8)
    line.withUnsafeBufferPointer { server.handle(line: $0) }
    server.render()
    let out = server.output
    server.clearOutput()
    guard out.last == 0x0A, out.dropLast().firstIndex(of: 0x0A) == nil,
      let reply = try? JSONReader.parse(Array(out.dropLast())), reply["id"] == .int(Int64(requestID))
    else { fail("\(method) \(params): not one reply with its id: \(String(decoding: out, as: UTF8.self))", input) }
    return reply
  }

  func result(_ reply: JSONValue, _ what: String) -> JSONValue {
    guard let result = reply["result"] else { fail("\(what): an error: \(text(reply))", input) }
    return result
  }

  // MARK: - Operations

  func save(_ a: Int, step: Int) {
    let user = a & 4 != 0 ? #","user":{"externalId":"u\#(step % 3)"}"# : ""
    let pad = "m\(step)z" + String(repeating: "x", count: a & 8 != 0 ? 200 : step % 7)
    let (method, params): (String, String)
    switch a % 3 {
    case 0: (method, params) = ("saveCustomEvent", #"{"name":"e\#(step)","properties":{"p":"\#(pad)"}\#(user)}"#)
    case 1: (method, params) = ("saveCustomAttribute", #"{"key":"k\#(step)","value":"\#(pad)","op":"set"\#(user)}"#)
    default: (method, params) = ("saveUserAttribute", #"{"field":"first_name","value":"\#(pad)"\#(user)}"#)
    }
    let reply = request(method, params)
    if let error = reply["error"] {
      // Only a refusal of the params (a user attribute needs a user) is expected.
      guard error["code"] == .int(-32602) else { fail("\(method) \(params): \(text(reply))", input) }
      return
    }
    let result = result(reply, method)
    guard let seq = result["seq"]?.uint, case .string(let id)? = result["id"] else {
      fail("\(method): a reply without seq or id: \(text(reply))", input)
    }
    guard seq > lastSeq, model.items[seq] == nil else { fail("\(method): seq \(seq) is not new", input) }
    lastSeq = seq
    // The body as stored when the save was answered: what every later read must give back.
    guard let item = service.store.items.item(seq: seq) else { fail("\(method): seq \(seq) not held", input) }
    model.items[seq] = Model.Item(id: id, body: item.body, deliveries: 0)
  }

  /// The seqs and delivery counts a flush handed out, checked against what the model expects.
  func handedOut(_ result: JSONValue, expected: [UInt64], _ what: String) {
    guard case .array(let items)? = result["items"] else { fail("\(what): no items: \(text(result))", input) }
    let seqs = items.compactMap { $0["seq"]?.uint }
    guard seqs == expected else { fail("\(what): handed out seqs \(seqs), the model expects \(expected)", input) }
    for item in items {
      let seq = item["seq"]!.uint!
      guard item["deliveryCount"] == .int(Int64(model.items[seq]!.deliveries)),
        item["id"] == .string(model.items[seq]!.id)
      else { fail("\(what): seq \(seq) handed out as \(text(item)), the model has \(model.items[seq]!)", input) }
    }
  }

  func drain(_ a: Int) {
    let max = a >= 10 ? nil : a % 5 + 1
    let params = max.map { #"{"max":\#($0)}"# } ?? "{}"
    let result = result(request("flushPending", params), "drain")
    let expected = Array(model.free.prefix(max ?? Int.max))
    handedOut(result, expected: expected, "drain \(params)")
    for seq in expected { model.items[seq] = nil }
  }

  func lease(_ a: Int) {
    let ms = Int64(a / 4 + 1) * 1000
    let result = result(request("flushPending", #"{"leaseMs":\#(ms),"max":\#(a % 4 + 1)}"#), "lease")
    guard case .string(let flushId)? = result["flushId"] else { fail("lease: no flushId: \(text(result))", input) }
    if let live = model.lease {  // a repeat while the lease is live: the same lease
      guard flushId == live.flushId else { fail("lease: \(flushId) while \(live.flushId) is live", input) }
      handedOut(result, expected: live.seqs, "lease repeat")
      return
    }
    let expected = Array(model.free.prefix(a % 4 + 1))
    handedOut(result, expected: expected, "lease")
    if !expected.isEmpty { model.lease = Model.Held(flushId: flushId, seqs: expected, expiresAt: clock + ms) }
  }

  func ack() {
    guard let live = model.lease else {
      let reply = request("ackFlush", #"{"flushId":"no-such-lease"}"#)
      guard reply["error"]?["code"] == .int(-32004) else { fail("ack of an unknown id: \(text(reply))", input) }
      return
    }
    let result = result(request("ackFlush", #"{"flushId":"\#(live.flushId)"}"#), "ack")
    guard result["acked"] == .int(Int64(live.seqs.count)) else {
      fail("ack: \(text(result)), the model expects \(live.seqs.count)", input)
    }
    for seq in live.seqs { model.items[seq] = nil }
    model.lease = nil
  }

  func release() {
    guard let live = model.lease else { return }
    let result = result(request("releaseFlush", #"{"flushId":"\#(live.flushId)"}"#), "release")
    guard result["released"] == .int(Int64(live.seqs.count)) else {
      fail("release: \(text(result)), the model expects \(live.seqs.count)", input)
    }
    model.endLease()
  }

  func expire(_ a: Int) {
    let now = clock + Int64(a) * 500
    let ended = service.store.expireLeases(now: now).map(\.flushId)
    server.render()  // commits the lease-end records, as the request that expires them would
    let due = model.lease.map { now >= $0.expiresAt } == true
    guard ended == (due ? [model.lease!.flushId] : []) else {
      fail("expire at +\(a * 500) ms ended \(ended), the model expects \(due ? [model.lease!.flushId] : [])", input)
    }
    if due { model.endLease() }
  }

  func snapshot(settled: Bool) {
    guard let disk = service.disk else { fail("no disk", input) }
    if settled { disk.settle() }  // one in flight (taken earlier) lands first; this one is of the state now
    disk.tick(service.store, now: clock)
    guard settled else { return }
    disk.settle()
    checkFiles()
    if verbose { Log.stderr("snapshot checked: \(Files.segmentFiles(directory)) on disk") }
  }

  func reopen(crash: Bool, _ a: Int) {
    server.render()
    if crash {
      service.disk?.settle()  // a kill -9 right after the last write: no final snapshot
    } else {
      service.disk?.finish(service.store, now: clock)
    }
    dropService()
    clock += Int64(a) * 500  // a lease may expire across the restart
    (service, server) = Session.open(directory, clock: clock, input: input)
    service.expireLeases()
    if let live = model.lease, clock >= live.expiresAt { model.endLease() }
    server.render()
    checkStore(crash ? "after a crash" : "after a reopen")
  }

  /// Drops the service (its lock is released) and, as a killed process would, closes the journal's
  /// segment descriptors that a dropped store leaves open.
  func dropService() {
    (service, server) = Session.placeholder
    guard let fds = opendir("/proc/self/fd") else { return }
    // readlinkat on the listing's own descriptor: no walk of /proc/self/fd/N per descriptor.
    let prefix = Array((directory + "/segment.").utf8)
    var segments: [Int32] = []
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 4096) { target in
      while let entry = readdir(fds) {
        withUnsafeBytes(of: entry.pointee.d_name) { raw in
          let name = raw.baseAddress!.assumingMemoryBound(to: CChar.self)
          guard let fd = Int32(String(cString: name)) else { return }
          let n = readlinkat(dirfd(fds), name, target.baseAddress!, 4096)
          if n >= prefix.count, target[0..<prefix.count].elementsEqual(prefix) { segments.append(fd) }
        }
      }
    }
    closedir(fds)
    for fd in segments { close(fd) }
  }

  /// A memory-only service that stands in between a drop and the next open.
  nonisolated(unsafe) static let placeholder: (Service, Server) = {
    var config = Configuration()
    config.memory = true
    let service = Service(config: config, log: Log(level: .error))
    return (service, Server(service: service))
  }()

  // MARK: - Invariants

  func checkStore(_ context: String) {
    let items = service.store.items
    guard items.count == model.items.count else {
      fail(
        "\(context): the store holds \(items.count) items, the model \(model.items.count) (\(model.items.keys.sorted()))",
        input)
    }
    for (seq, want) in model.items {
      guard let item = items.item(seq: seq) else { fail("\(context): seq \(seq) is missing", input) }
      guard item.body == want.body else {
        fail("\(context): seq \(seq) has body \(String(decoding: item.body, as: UTF8.self))", input)
      }
      guard item.id.text == want.id, item.deliveryCount == want.deliveries else {
        fail(
          "\(context): seq \(seq) is \(item.id.text) with \(item.deliveryCount) deliveries, the model has \(want)",
          input)
      }
    }
    let leases = service.store.leases.map { ($0.flushId, $0.seqs) }
    let expected = model.lease.map { [($0.flushId, $0.seqs)] } ?? []
    guard leases.count == expected.count, zip(leases, expected).allSatisfy({ $0.0 == $1.0 && $0.1 == $1.1 }) else {
      fail("\(context): the store's leases are \(leases), the model's \(expected)", input)
    }
  }

  func checkFiles() {
    // A store that never held anything has had no reason to snapshot (it is never dirty).
    if model.items.isEmpty && model.lease == nil && access(directory + "/checkpoint.json", F_OK) != 0 { return }
    let checkpoint: CheckpointFile
    switch Files.checkpoint(directory) {
    case .success(let file): checkpoint = file
    case .failure(let problem): fail("after a snapshot: \(problem.text)", input)
    }
    let files = Files.segmentFiles(directory)
    var records: [UInt64: [UInt64: [UInt8]]] = [:]
    for first in checkpoint.segments {
      guard files.contains(first), let bytes = Files.read(directory + "/" + Files.segmentName(first)),
        let items = Files.itemRecords(bytes)
      else {
        fail(
          "after a snapshot: \(Files.segmentName(first)), listed in checkpoint.json, is missing or unreadable", input)
      }
      records[first] = items
    }
    var found: [UInt64: Int] = [:]
    for (seq, item) in model.items where seq <= checkpoint.coversSeq {
      guard let owner = files.last(where: { $0 <= seq }) else {
        fail("after a snapshot: held seq \(seq) lies before every segment file (\(files))", input)
      }
      guard let held = records[owner] else {
        fail("after a snapshot: held seq \(seq)'s segment \(owner) is not listed (\(checkpoint.segments))", input)
      }
      guard held[seq] == item.body else {
        fail("after a snapshot: segment \(owner) has no record of held seq \(seq) with its body", input)
      }
      found[owner, default: 0] += 1
    }
    let covered = model.items.keys.filter { $0 <= checkpoint.coversSeq }.count
    guard checkpoint.items == covered, found.values.reduce(0, +) == covered else {
      fail("after a snapshot: checkpoint.json counts \(checkpoint.items) items, the model holds \(covered)", input)
    }
    if let held = checkpoint.held {
      let counts = checkpoint.segments.map { found[$0] ?? 0 }
      guard held == counts else {
        fail("after a snapshot: checkpoint.json's held \(held), the segments hold \(counts)", input)
      }
    }
    let leases = model.lease.map { [$0.flushId: $0.seqs] } ?? [:]
    guard checkpoint.leases == leases else {
      fail("after a snapshot: checkpoint.json's leases \(checkpoint.leases), the model's \(leases)", input)
    }
  }

  func text(_ value: JSONValue) -> String {
    var out: [UInt8] = []
    value.encodeJSON(into: &out)
    return String(decoding: out, as: UTF8.self)
  }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStoreOps(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
  let input = data.map { Array(UnsafeBufferPointer(start: $0, count: Swift.min(size, 64))) } ?? []
  guard !input.isEmpty else { return 0 }
  let directory = TempDirectory.reused()
  defer { directory.release() }
  let session = Session(directory: directory.path, input: input)
  var restarts = 0
  for (step, byte) in input.enumerated() {
    let a = Int(byte >> 4)
    if verbose {
      Log.stderr(
        "op \(byte & 0x0F) a \(a): held \(session.model.items.keys.sorted()), lease \(session.model.lease.map { "\($0)" } ?? "none")"
      )
    }
    switch byte & 0x0F {
    case 5: session.drain(a)
    case 6: session.lease(a)
    case 7: session.ack()
    case 8: session.release()
    case 9: session.expire(a)
    case 10: session.snapshot(settled: true)
    case 11: session.snapshot(settled: false)
    case 12, 13:
      guard restarts < 4 else {
        session.snapshot(settled: true)
        continue
      }
      restarts += 1
      session.reopen(crash: byte & 0x0F == 13, a)
    default: session.save(a, step: step)
    }
  }
  session.service.disk?.settle()
  session.dropService()
  return 0
}

private func fail(_ message: String, _ input: [UInt8]) -> Never {
  fuzzFailure("FuzzStoreOps", message, input, asBytes: true)
}

@_cdecl("FuzzStoreOps_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
  runFuzzer(argc, argv, fuzzStoreOps)
}
