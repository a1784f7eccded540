import Foundation
import Testing

@testable import OutboxStore
@testable import OutboxSupport

/// A `load.image` that is damaged, crafted or stale: a damaged or stale one is never used (the start
/// loads exactly what a replay of the segments loads), and a crafted one with a valid checksum never
/// traps: whatever it holds, every row it gave can be read, checked and removed, and the intern
/// tables end empty (their uses were counted from the rows, not read).
@Suite struct LoadImageHostileTests {
  static let log = Log(level: .error)

  /// A store of a few hundred items with users, client ids, leases and dead letters, exited cleanly.
  private func makeStore(_ dir: URL, seed: UInt64) throws {
    let store = Store()
    let options = FileOptions(directory: dir.path, fsync: .never, snapshotInterval: 1, loadImageMinBytes: 0)
    let disk = try FileKeeper(options, store: store, log: Self.log)
    var rng = SeededGenerator(seed: seed)
    for n in 0..<300 {
      let user = n % 7 == 0 ? "" : #","user":{"externalId":"u\#(rng.next() % 25)"}"#
      let body = Array((user + #","name":"e\#(n % 4)","properties":{"n":\#(n)}"#).utf8)
      let id = n % 9 == 0 ? ItemID(client: Array("c\(n)".utf8)) : ItemID(high: rng.next(), low: rng.next())
      _ = try body.withUnsafeBytes {
        try store.save(
          kind: .customEvent, id: id, savedAt: 1_767_225_600_000 + Int64(n), hasUser: !user.isEmpty, body: $0)
      }
    }
    #expect(store.commit() == nil)
    store.drain(Array(1...40), flushId: "d")
    store.lease(Lease(flushId: "L1", seqs: [50, 51, 52, 53], expiresAt: 1_867_225_600_000, note: []))
    store.settle("L1", delivered: [50], dead: [(51, "refused")])
    store.lease(Lease(flushId: "L2", seqs: [60, 61], expiresAt: 1_867_225_600_000, note: []))
    #expect(store.commit() == nil)
    disk.finish(store, now: 1_767_225_700_000)
  }

  private func load(_ dir: URL) throws -> (rows: [[UInt8]], fromImage: Bool, store: Store) {
    let store = Store()
    let outcome = try Recovery.run(directory: dir.path, store: store, acceptLoss: false, log: Self.log)
    let items = store.items
    let rows = items.table.rows.filter { !items.table.has(.removed, $0) }.map { row in
      Array("\(items.table.seqs[row]) \(items.id(row: row).text) \(items.table.deliveries[row]) ".utf8)
        + items.body(row: row)
    }
    return (rows, outcome.fromImage, store)
  }

  /// A new scratch directory with `makeStore`'s store in it.
  private func scratchStore(seed: UInt64) throws -> (root: URL, dir: URL) {
    let root = Paths.temporaryDirectory()
    let dir = root.appendingPathComponent("store")
    try makeStore(dir, seed: seed)
    return (root, dir)
  }

  private func copy(_ dir: URL, to name: String, in root: URL) throws -> URL {
    let target = root.appendingPathComponent(name)
    try? FileManager.default.removeItem(at: target)
    try FileManager.default.copyItem(at: dir, to: target)
    return target
  }

  @Test(arguments: 1...4 as ClosedRange<UInt64>)
  func aDamagedImageIsNeverUsed(seed: UInt64) throws {
    let (root, dir) = try scratchStore(seed: seed)
    defer { try? FileManager.default.removeItem(at: root) }
    let replayed = try copy(dir, to: "replayed", in: root)
    try FileManager.default.removeItem(at: replayed.appendingPathComponent(LoadImage.fileName))
    let want = try load(replayed).rows
    #expect(want.count == 259)
    let intact = try Data(contentsOf: dir.appendingPathComponent(LoadImage.fileName))
    var rng = SeededGenerator(seed: seed)
    for trial in 0..<60 {
      var bytes = [UInt8](intact)
      switch trial % 4 {
      case 0: bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
      case 1: bytes.removeLast(Int.random(in: 1..<bytes.count, using: &rng))
      case 2: bytes += (0..<Int.random(in: 1...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
      default:
        let start = Int.random(in: 0..<bytes.count, using: &rng)
        for i in start..<min(bytes.count, start + Int.random(in: 1...300, using: &rng)) { bytes[i] = 0 }
        if bytes == [UInt8](intact) { continue }
      }
      let damaged = try copy(dir, to: "damaged", in: root)
      try Data(bytes).write(to: damaged.appendingPathComponent(LoadImage.fileName))
      let loaded = try load(damaged)
      #expect(!loaded.fromImage, "seed \(seed) trial \(trial): a damaged image was used")
      #expect(loaded.rows == want, "seed \(seed) trial \(trial)")
      #expect(!FileManager.default.fileExists(atPath: damaged.appendingPathComponent(LoadImage.fileName).path))
    }
  }

  @Test(arguments: 1...4 as ClosedRange<UInt64>)
  func aCraftedImageWithAValidChecksumNeverTraps(seed: UInt64) throws {
    let (root, dir) = try scratchStore(seed: seed)
    defer { try? FileManager.default.removeItem(at: root) }
    let intact = [UInt8](try Data(contentsOf: dir.appendingPathComponent(LoadImage.fileName)))
    var rng = SeededGenerator(seed: seed)
    var used = 0
    for trial in 0..<200 {
      var bytes = intact
      let body = bytes.count - LoadImage.trailerSize
      for _ in 0..<Int.random(in: 1...3, using: &rng) {
        let at = Int.random(in: 8..<body, using: &rng)
        bytes[at] =
          [0, 1, 0x7F, 0x80, 0xFF, UInt8.random(in: 0...255, using: &rng)][Int.random(in: 0..<6, using: &rng)]
      }
      let crc = CRC32C.checksum(Array(bytes[0..<body]))
      withUnsafeBytes(of: crc.littleEndian) { for i in 0..<4 { bytes[body + i] = $0[i] } }
      let crafted = try copy(dir, to: "crafted", in: root)
      try Data(bytes).write(to: crafted.appendingPathComponent(LoadImage.fileName))
      let loaded: (rows: [[UInt8]], fromImage: Bool, store: Store)
      do { loaded = try load(crafted) } catch { continue }  // refused to start: no trap
      used += loaded.fromImage ? 1 : 0
      let items = loaded.store.items
      let seqs = items.table.rows.filter { !items.table.has(.removed, $0) }.map { items.table.seqs[$0] }
      for row in items.table.rows where !items.table.has(.removed, row) { _ = items.wellFormedItem(row: row) }
      items.remove(seqs: seqs)
      #expect(items.count == 0 && items.bytes == 0, "seed \(seed) trial \(trial)")
      #expect(items.bodies.users.count == 0 && items.bodies.labels.count == 0, "seed \(seed) trial \(trial)")
    }
    #expect(used > 20, "seed \(seed): crafted images were loaded and exercised (\(used))")
  }

  /// A segment that grew or shrank since the image was written (a write of another process, a cut
  /// tail, a hand edit): the image does not describe it, and the start replays the files.
  @Test func anImageBesideResizedSegmentsIsNeverUsed() throws {
    let (root, dir) = try scratchStore(seed: 8)
    defer { try? FileManager.default.removeItem(at: root) }
    let segments = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("segment.") }
    #expect(!segments.isEmpty)
    #expect(try load(copy(dir, to: "intact", in: root)).fromImage, "the intact image is used")
    for name in segments {
      for grow in [true, false] {
        let changed = try copy(dir, to: "changed", in: root)
        let file = try FileHandle(forUpdating: changed.appendingPathComponent(name))
        let size = try file.seekToEnd()
        if grow { try file.write(contentsOf: Data([0])) } else { try file.truncate(atOffset: size - 1) }
        try file.close()
        #expect(try !load(changed).fromImage, "\(name) \(grow ? "grew" : "shrank"): the image was used")
      }
    }
  }

  /// An image kept from before the store changed (put back by hand, or an unlink lost in a crash) no
  /// longer describes the files: the start replays them and loses nothing saved since.
  @Test func aStaleImageIsNeverUsed() throws {
    let (root, dir) = try scratchStore(seed: 7)
    defer { try? FileManager.default.removeItem(at: root) }
    let old = try Data(contentsOf: dir.appendingPathComponent(LoadImage.fileName))
    for clean in [false, true] {
      let store = Store()
      let options = FileOptions(directory: dir.path, fsync: .never, snapshotInterval: 1, loadImageMinBytes: nil)
      let disk = try FileKeeper(options, store: store, log: Self.log)
      let body = Array(#","name":"later","properties":{}"#.utf8)
      let receipt = try body.withUnsafeBytes {
        try store.save(
          kind: .customEvent, id: ItemID(client: Array("late-\(clean)".utf8)), savedAt: 1_767_225_800_000,
          hasUser: false, body: $0)
      }
      #expect(store.commit() == nil)
      if clean { store.drain([41, 42], flushId: "later") }
      #expect(store.commit() == nil)
      if clean { disk.finish(store, now: 1_767_225_900_000) } else { disk.settle() }
      try old.write(to: dir.appendingPathComponent(LoadImage.fileName))
      let copyOf = try copy(dir, to: "check", in: root)
      let loaded = try load(copyOf)
      #expect(!loaded.fromImage, "clean exit \(clean): a stale image was used")
      #expect(loaded.store.items.item(seq: receipt.seq) != nil, "clean exit \(clean): the later save")
      #expect(loaded.store.items.item(seq: 41) == nil || !clean, "clean exit \(clean): the drain")
      try FileManager.default.removeItem(at: dir.appendingPathComponent(LoadImage.fileName))
    }
  }
}
