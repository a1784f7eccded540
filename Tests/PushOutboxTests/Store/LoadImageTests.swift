import Foundation
import Testing

@testable import OutboxStore
@testable import OutboxSupport

/// `load.image`: a clean exit writes it, the next start loads the rows from it. Random sessions of
/// saves (users shared and unique, client and generated ids, trailing times), drains, leases,
/// settles with dead letters, requeues and releases, against a plain model of what is held; every
/// start after a clean exit must load from the image exactly the rows a replay of the same files
/// loads, and the model's. A crash leaves no image; a stale or damaged one is never used.
@Suite struct LoadImageTests {
  struct Held: Equatable {
    var body: [UInt8]
    var deliveries: UInt32 = 0
    var dead: String? = nil
    var client: [UInt8] = []
  }

  struct Model {
    var items: [UInt64: Held] = [:]
    var leases: [String: [UInt64]] = [:]
    var free: [UInt64] {
      items.keys.filter { seq in items[seq]?.dead == nil && !leases.values.contains { $0.contains(seq) } }.sorted()
    }
  }

  /// A row as every path must load it.
  struct Row: Equatable {
    var seq: UInt64
    var id: String
    var kind: ItemKind
    var savedAt: Int64
    var deliveries: UInt32
    var flags: UInt8
    var body: [UInt8]
    var reason: String?
  }

  static let log = Log(level: .error)
  static func options(_ dir: URL) -> FileOptions {
    FileOptions(directory: dir.path, fsync: .never, snapshotInterval: 0.000_001, loadImageMinBytes: 0)
  }

  @Test(arguments: 1...6 as ClosedRange<UInt64>)
  func imagesLoadWhatAReplayLoadsAndTheModelHolds(seed: UInt64) throws {
    var rng = SeededGenerator(seed: seed)
    let root = Paths.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: root) }
    let dir = root.appendingPathComponent("store")
    var model = Model()
    var clock: Int64 = 1_767_225_600_000
    var usedImages = 0
    for round in 0..<8 {
      let image = dir.appendingPathComponent(LoadImage.fileName).path
      if FileManager.default.fileExists(atPath: image) {
        try compareWithReplay(dir, root: root, "seed \(seed) round \(round)")
        usedImages += 1
      }
      let store = Store()
      let disk = try FileKeeper(Self.options(dir), store: store, log: Self.log)
      #expect(!FileManager.default.fileExists(atPath: image), "the image is deleted at start")
      check(store, model, "seed \(seed) round \(round)")
      for step in 0..<Int.random(in: 5...30, using: &rng) {
        try operate(store, &model, &rng, clock: &clock, tag: "\(round).\(step)")
        #expect(store.commit() == nil)
        if Int.random(in: 0..<4, using: &rng) == 0 { disk.tick(store, now: clock) }
      }
      if Int.random(in: 0..<5, using: &rng) == 0 {
        disk.settle()  // a kill -9: no final snapshot, no image
      } else {
        disk.finish(store, now: clock)
        #expect(FileManager.default.fileExists(atPath: image), "seed \(seed) round \(round): a clean exit writes one")
      }
    }
    #expect(usedImages >= 3, "seed \(seed): the images were exercised")
  }

  /// Loads a copy of the store from its image and another from its segments alone: the same rows,
  /// counts and leases.
  private func compareWithReplay(_ dir: URL, root: URL, _ context: String) throws {
    let (withImage, replayed) = (root.appendingPathComponent("a"), root.appendingPathComponent("b"))
    defer { for copy in [withImage, replayed] { try? FileManager.default.removeItem(at: copy) } }
    try FileManager.default.copyItem(at: dir, to: withImage)
    try FileManager.default.copyItem(at: dir, to: replayed)
    try FileManager.default.removeItem(at: replayed.appendingPathComponent(LoadImage.fileName))
    let (a, b) = (Store(), Store())
    let imageOutcome = try Recovery.run(directory: withImage.path, store: a, acceptLoss: false, log: Self.log)
    let replayOutcome = try Recovery.run(directory: replayed.path, store: b, acceptLoss: false, log: Self.log)
    #expect(imageOutcome.fromImage && !replayOutcome.fromImage, "\(context): the image was used")
    #expect(rows(a) == rows(b), "\(context): rows")
    let (x, y) = (a.items, b.items)
    #expect(
      x.count == y.count && x.bytes == y.bytes && x.counts == y.counts && x.deadCount == y.deadCount, "\(context)")
    #expect(x.nextSeq == y.nextSeq, "\(context): nextSeq")
    #expect(imageOutcome.leases == replayOutcome.leases, "\(context): leases")
    #expect(imageOutcome.segments.map(\.first) == replayOutcome.segments.map(\.first), "\(context): segments")
    #expect(imageOutcome.segments.map(\.bytes) == replayOutcome.segments.map(\.bytes), "\(context): segment sizes")
  }

  private func rows(_ store: Store) -> [Row] {
    let items = store.items
    let table = items.table
    let flags = ItemTable.Flags.hasUser.rawValue | ItemTable.Flags.clientID.rawValue | ItemTable.Flags.dead.rawValue
    return table.rows.filter { !table.has(.removed, $0) }.map { row in
      Row(
        seq: table.seqs[row], id: items.id(row: row).text, kind: table.kind(row), savedAt: table.savedAt[row],
        deliveries: table.deliveries[row], flags: table.flags[row] & flags, body: items.body(row: row),
        reason: items.deadReasons[table.seqs[row]])
    }
  }

  private func check(_ store: Store, _ model: Model, _ context: String) {
    #expect(store.items.count == model.items.count, "\(context): held")
    for (seq, want) in model.items {
      guard let item = store.items.item(seq: seq) else {
        Issue.record("\(context): seq \(seq) is missing")
        continue
      }
      #expect(item.body == want.body, "\(context): seq \(seq) body")
      #expect(item.deliveryCount == want.deliveries, "\(context): seq \(seq) deliveries")
      #expect(store.items.deadReasons[seq] == want.dead, "\(context): seq \(seq) dead letter")
      if !want.client.isEmpty { #expect(item.id.client == want.client, "\(context): seq \(seq) id") }
      if !want.client.isEmpty { #expect(store.items.seq(clientID: want.client) == seq, "\(context): client id") }
    }
    #expect(Set(store.leases.map(\.flushId)) == Set(model.leases.keys), "\(context): leases")
  }

  private static let users = (0..<12).map { #","user":{"externalId":"u\#($0)"}"# }

  private func body(_ rng: inout SeededGenerator, seq: UInt64, savedAt: Int64) -> (ItemKind, [UInt8], Bool) {
    let roll = Int.random(in: 0..<10, using: &rng)
    let user =
      roll < 6
      ? Self.users[Int.random(in: 0..<Self.users.count, using: &rng)]
      : roll < 9 ? #","user":{"brazeId":"\#(String(rng.next(), radix: 16))"}"# : ""
    let kind = ItemKind.allCases[Int.random(in: 0..<3, using: &rng)]
    var text: String
    switch kind {
    case .customEvent: text = user + #","name":"e\#(seq % 5)","properties":{"n":\#(seq)}"#
    case .customAttribute: text = user + #","key":"k\#(seq % 3)","value":\#(seq)"#
    case .userAttribute: text = user + #","field":"email","value":"a\#(seq)@example.com""#
    }
    var bytes = Array(text.utf8)
    if Bool.random(using: &rng) {  // a trailing time of the item's own: dropped and rendered again
      bytes += Array(#","time":""#.utf8)
      UTCTime.append(ms: savedAt, to: &bytes)
      bytes.append(UInt8(ascii: "\""))
    }
    return (kind, bytes, !user.isEmpty)
  }

  private func operate(
    _ store: Store, _ model: inout Model, _ rng: inout SeededGenerator, clock: inout Int64, tag: String
  ) throws {
    clock += Int64.random(in: 1...50, using: &rng)
    let free = model.free
    switch Int.random(in: 0..<10, using: &rng) {
    case 0..<5:
      for n in 0..<Int.random(in: 1...60, using: &rng) {
        let seq = store.items.nextSeq
        let (kind, bytes, hasUser) = body(&rng, seq: seq, savedAt: clock)
        let roll = Int.random(in: 0..<3, using: &rng)
        let client = roll == 0 ? Array("c\(tag).\(n)".utf8) : []
        let (high, low) = IDGenerator.words(key: store.items.idKey, ms: clock, counter: seq)
        let id =
          roll == 0
          ? ItemID(client: client)
          : roll == 1 ? ItemID(high: high, low: low) : ItemID(high: rng.next(), low: rng.next())
        let receipt = try bytes.withUnsafeBytes {
          try store.save(kind: kind, id: id, savedAt: clock, hasUser: hasUser, body: $0)
        }
        #expect(receipt.seq == seq && !receipt.duplicate)
        model.items[seq] = Held(body: bytes, client: client)
      }
    case 5 where !free.isEmpty:
      let picked = free.filter { _ in Int.random(in: 0..<3, using: &rng) == 0 }
      store.drain(picked, flushId: "d" + tag)
      for seq in picked { model.items[seq] = nil }
    case 6 where !free.isEmpty:
      let seqs = Array(free.shuffled(using: &rng).prefix(Int.random(in: 1...12, using: &rng))).sorted()
      store.lease(Lease(flushId: "L" + tag, seqs: seqs, expiresAt: clock + 86_400_000, note: []))
      model.leases["L" + tag] = seqs
    case 7:
      guard let (id, seqs) = model.leases.min(by: { $0.key < $1.key }) else { return }
      let delivered = seqs.filter { _ in Int.random(in: 0..<3, using: &rng) == 0 }
      let dead = seqs.filter { !delivered.contains($0) && Int.random(in: 0..<2, using: &rng) == 0 }
      store.settle(id, delivered: delivered, dead: dead.map { ($0, "refused \(tag)") })
      for seq in delivered { model.items[seq] = nil }
      for seq in dead { model.items[seq]?.dead = "refused \(tag)" }
      for seq in seqs where !delivered.contains(seq) && !dead.contains(seq) { model.items[seq]?.deliveries += 1 }
      model.leases[id] = nil
    case 8:
      guard let (id, seqs) = model.leases.max(by: { $0.key < $1.key }) else { return }
      #expect(try store.release(id) == seqs.count)
      for seq in seqs { model.items[seq]?.deliveries += 1 }
      model.leases[id] = nil
    default:
      let dead = model.items.filter { $0.value.dead != nil }.keys.sorted().filter { _ in Bool.random(using: &rng) }
      try store.requeue(dead)
      for seq in dead { model.items[seq]?.dead = nil }
    }
  }
}
