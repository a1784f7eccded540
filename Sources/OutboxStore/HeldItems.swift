import OutboxJSON
import OutboxSupport

/// Why the store refused a change. Mapped to JSON-RPC errors in one place (`MethodTable`).
package enum StoreError: Error, Sendable, Equatable {
  /// `current`: the store directory's bytes, for `--max-store-bytes`.
  case storeFull(limit: String, value: Int, current: Int? = nil)
  case itemTooLarge(bytes: Int, limit: Int)
  case leaseNotFound(String)
  case storageUnavailable(String)
}

/// Limits enforced with an error, never by evicting items.
package struct StoreLimits: Sendable {
  package var maxPending = Int.max
  package var maxPendingBytes = Int.max
  package var maxItemBytes = Int.max
  /// `--max-store-bytes`: the whole directory (see `StoreCap`); nil without a cap.
  package var maxStoreBytes: Int? = nil
  package init() {}
}

/// The held items, in seq order, in memory: an `ItemTable` of rows whose bytes live in an `Arena`.
///
/// Single-threaded by design: the request loop owns it. It knows nothing of files; `Store` journals
/// every change it makes here.
package final class HeldItems {
  package private(set) var table = ItemTable()
  let arena = Arena()
  package private(set) var nextSeq: UInt64 = 1
  package private(set) var bytes = 0
  /// Pending items per kind (dead letters not included).
  package private(set) var counts: [Int] = Array(repeating: 0, count: ItemKind.allCases.count)
  package private(set) var leasedCount = 0
  /// Dead letters: held rows out of the pending set, with the reason each was refused.
  package private(set) var deadCount = 0
  package private(set) var deadReasons: [UInt64: String] = [:]
  private var clientIDs: [ByteKey: UInt64] = [:]
  package var limits = StoreLimits()
  /// The key of generated item ids (`IDGenerator.words(key:ms:counter:)`): an id it gives for a row's
  /// seq and time is recomputed, not held. The server sets it to its generator's; a store on disk
  /// keeps its own in the checkpoint, and recovery sets it before the rows load.
  package var idKey: UInt64 = 0
  var bodies = StoredBody()
  /// Where `withBody` puts a body back together.
  private var scratch: [UInt8] = []
  private var scratchInUse = false

  package init() {}
  package var count: Int { table.liveCount }

  /// Makes room for `count` more rows at once (recovery knows the count from the checkpoint).
  package func reserve(_ count: Int) {
    guard count > 0 else { return }
    table.reserve(table.seqs.count + count)
  }

  /// Takes what a load image held (recovery, into an empty store, before any row is loaded).
  func install(_ image: LoadedImage) {
    arena.take(image.arena)
    (table, bodies, nextSeq, bytes) = (image.table, image.bodies, image.nextSeq, image.bytes)
    (counts, deadCount, deadReasons, clientIDs) = (image.counts, image.deadCount, image.deadReasons, image.clientIDs)
  }

  // MARK: - Saving

  /// Takes the next sequence number. Numbers are never reused, even when a save is rolled back.
  func takeSeq() -> UInt64 {
    defer { nextSeq += 1 }
    return nextSeq
  }

  /// Never hand out a seq below `next`.
  func advanceSeq(to next: UInt64) {
    if next > nextSeq { nextSeq = next }
  }

  /// Checks the limits an item of `itemBytes` must meet before it is appended.
  package func admit(itemBytes: Int) throws(StoreError) {
    if let refusal = refusal(itemBytes: itemBytes, count: count, bytes: bytes) { throw refusal }
  }

  /// For items of `itemBytes` saved together, one after the other: the index of the first that
  /// `admit` would refuse once the ones before it were held, and why; nil when they all fit.
  package func firstRefused(itemBytes: [Int]) -> (index: Int, error: StoreError)? {
    var count = count
    var bytes = bytes
    for (index, size) in itemBytes.enumerated() {
      if let refusal = refusal(itemBytes: size, count: count, bytes: bytes) { return (index, refusal) }
      count += 1
      bytes += size
    }
    return nil
  }

  private func refusal(itemBytes: Int, count: Int, bytes: Int) -> StoreError? {
    if itemBytes > limits.maxItemBytes { return .itemTooLarge(bytes: itemBytes, limit: limits.maxItemBytes) }
    if count >= limits.maxPending { return .storeFull(limit: "max-pending", value: limits.maxPending) }
    if itemBytes > limits.maxPendingBytes - bytes {
      return .storeFull(limit: "max-pending-bytes", value: limits.maxPendingBytes)
    }
    return nil
  }

  /// Appends an item with a seq above every held one. `verified`: the body is known canonical (a
  /// save wrote it); a loaded body is checked when it is first written out (`wellFormed`).
  /// `parts`: where the writer put the body's user and label (`BodyParts`), else they are looked for.
  package func append(
    seq: UInt64, id: ItemID, kind: ItemKind, savedAt: Int64, deliveryCount: UInt32 = 0, hasUser: Bool,
    body: UnsafeRawBufferPointer, verified: Bool = true, parts: BodyParts? = nil
  ) {
    let recomputed =
      id.clientLength > 0 || IDGenerator.words(key: idKey, ms: savedAt, counter: seq) == (id.high, id.low)
    let (prefix, kept) = bodies.encode(
      body, savedAt: savedAt, explicitID: recomputed ? nil : (id.high, id.low), parts: parts)
    let location = withUnsafeBytes(of: prefix.bytes) { prefixBytes in
      id.client.withUnsafeBytes {
        arena.append(
          $0, UnsafeRawBufferPointer(rebasing: prefixBytes[0..<prefix.count]),
          UnsafeRawBufferPointer(rebasing: body[kept]))
      }
    }
    var flags: ItemTable.Flags = hasUser ? .hasUser : []
    if verified { flags.insert(.verified) }
    table.append(
      seq: seq, savedAt: savedAt, location: location, length: prefix.count + kept.count,
      clientIDLength: id.clientLength, kind: kind, flags: flags, deliveries: deliveryCount)
    if seq >= nextSeq { nextSeq = seq + 1 }
    bytes += PendingItem.byteCount(body: body.count, clientID: id.clientLength)
    counts[Int(kind.rawValue)] += 1
    if !id.client.isEmpty { clientIDs[ByteKey(id.client)] = seq }
  }

  package func append(_ item: PendingItem) {
    item.body.withUnsafeBytes {
      append(
        seq: item.seq, id: item.id, kind: item.kind, savedAt: item.savedAt, deliveryCount: item.deliveryCount,
        hasUser: item.hasUser, body: $0)
    }
  }

  /// The seq of the held item saved with this client id, if any (compared by bytes).
  package func seq(clientID: [UInt8]) -> UInt64? {
    guard let seq = clientIDs[ByteKey(clientID)], table.row(of: seq) != nil else { return nil }
    return seq
  }

  // MARK: - Reading

  package func contains(seq: UInt64) -> Bool { table.row(of: seq) != nil }

  /// When the oldest pending item (not a dead letter) was saved; nil when none is.
  package var oldestPendingSavedAt: Int64? {
    table.rows.first { !table.has(.removed, $0) && !table.has(.dead, $0) }.map { table.savedAt[$0] }
  }

  /// The oldest held item's seq.
  package var firstSeq: UInt64? { table.rows.first { !table.has(.removed, $0) }.map { table.seqs[$0] } }

  /// Seqs of loaded items whose bodies turned out not to be JSON members (a crafted record with a
  /// valid checksum); the store removes them at its next commit. They are never written out.
  package private(set) var malformed: [UInt64] = []

  /// True when the row's body may be written out as it is: saved here, or loaded and checked now.
  package func wellFormed(_ row: Int) -> Bool {
    if table.has(.verified, row) { return true }
    return withBody(row: row) { wellFormed(row, body: $0) }
  }

  func wellFormed(_ row: Int, body: UnsafeRawBufferPointer) -> Bool {
    if CanonicalJSON.isMembers(body) {  // what saves write: no parse needed
      table.set(.verified, true, row)
      return true
    }
    var text: [UInt8] = [UInt8(ascii: "{")]
    if let first = body.first {
      guard first == UInt8(ascii: ",") else { return reject(row) }
      text.append(contentsOf: body.dropFirst())
    }
    text.append(UInt8(ascii: "}"))
    // Well formed, not canonical: left unmarked, as `.verified` promises canonical bytes (read again next time).
    guard case .object? = try? JSONReader.parse(text, maxDepth: 1000) else { return reject(row) }
    return true
  }

  private func reject(_ row: Int) -> Bool {
    malformed.append(table.seqs[row])
    return false
  }

  /// Hands over the malformed seqs found so far.
  var hasMalformed: Bool { !malformed.isEmpty }

  func takeMalformed() -> [UInt64] {
    defer { malformed.removeAll() }
    return malformed
  }

  // MARK: - Changing

  /// Removes the held items with these seqs (any order). Returns the seqs that were held, once each.
  /// A run of rows at a time: their user table reads first, all at once, then the removals.
  @discardableResult
  package func remove(seqs: [UInt64]) -> [UInt64] {
    var removed: [UInt64] = []
    removed.reserveCapacity(seqs.count)
    var guess = table.head  // the row after the last one found (`ItemTable.row(of:guess:)`)
    for start in stride(from: 0, to: seqs.count, by: Self.warmRun) {
      let run = seqs[start..<min(start + Self.warmRun, seqs.count)]
      let rows = run.map { seq in
        let row = table.row(of: seq, guess: guess)
        if let row { guess = row + 1 }
        return row
      }
      warmRemoval(rows: rows.compactMap { $0 })
      var stale = false
      for (found, seq) in zip(rows, run) {
        // After a renumbering (the table compacted) the rest are looked up again; a repeated seq goes once.
        guard let row = stale ? table.row(of: seq) : found, !table.has(.removed, row) else { continue }
        forget(row)
        if table.remove(row) { (stale, guess) = (true, 0) }
        removed.append(seq)
      }
    }
    return removed
  }

  /// Takes back the newest items (a save whose journal write failed); `seqs` are the newest held.
  func rollBack(seqs: [UInt64]) {
    for seq in seqs.sorted(by: >) {
      guard let row = table.row(of: seq) else { continue }
      forget(row)
      if row == table.seqs.count - 1 { table.removeLast() } else { table.remove(row) }
    }
  }

  /// Marks items leased or not; when a lease ends without an ack their delivery count rises.
  /// Returns the seqs changed with their new delivery counts.
  @discardableResult
  func setLeased(_ seqs: [UInt64], _ leased: Bool, countDelivery: Bool = false) -> [(UInt64, UInt32)] {
    var changed: [(UInt64, UInt32)] = []
    for seq in seqs {
      guard let row = table.row(of: seq), table.has(.leased, row) != leased else { continue }
      table.set(.leased, leased, row)
      leasedCount += leased ? 1 : -1
      if countDelivery && table.deliveries[row] < UInt32.max { table.deliveries[row] += 1 }
      changed.append((seq, table.deliveries[row]))
    }
    return changed
  }

  /// Makes held, unleased items dead letters with `reason` (or live again with nil). Returns the seqs changed.
  @discardableResult
  func setDead(_ seqs: [UInt64], reason: String?) -> [UInt64] {
    var changed: [UInt64] = []
    for seq in seqs {
      guard let row = table.row(of: seq), !table.has(.leased, row) else { continue }
      let wasDead = table.has(.dead, row)
      if let reason {
        deadReasons[seq] = reason.prefix(utf8Bytes: SegmentFormat.maxReasonBytes)
        if wasDead { continue }
        table.set(.dead, true, row)
        deadCount += 1
        counts[Int(table.kind(row).rawValue)] -= 1
      } else {
        guard wasDead else { continue }
        table.set(.dead, false, row)
        deadReasons[seq] = nil
        deadCount -= 1
        counts[Int(table.kind(row).rawValue)] += 1
      }
      changed.append(seq)
    }
    return changed
  }

  /// Raises an item's delivery count to at least `count` (journal replay). True when it rose.
  @discardableResult
  func raiseDeliveries(seq: UInt64, to count: UInt32) -> Bool {
    guard let row = table.row(of: seq), table.deliveries[row] < count else { return false }
    table.deliveries[row] = count
    return true
  }

  func forget(_ row: Int) {
    let idLength = Int(table.idLengths[row])
    let record = record(row)
    bytes -= PendingItem.byteCount(body: bodies.release(record), clientID: idLength)
    if table.has(.leased, row) { leasedCount -= 1 }
    if table.has(.dead, row) {
      deadCount -= 1
      deadReasons[table.seqs[row]] = nil
    } else {
      counts[Int(table.kind(row).rawValue)] -= 1
    }
    if idLength > 0 {
      let key = ByteKey(Array(arena.bytes(at: table.locations[row], length: idLength)))
      if clientIDs[key] == table.seqs[row] { clientIDs[key] = nil }
    }
    arena.release(table.locations[row], length: idLength + Int(table.lengths[row]))
  }
}

// MARK: - Rows

/// Reading a held row: its item, its id, its body (put back together from its `StoredBody` record).
extension HeldItems {
  /// The item in `row`, copied out.
  package func item(row: Int) -> PendingItem {
    var item = PendingItem(
      seq: table.seqs[row], id: id(row: row), kind: table.kind(row), savedAt: table.savedAt[row],
      deliveryCount: table.deliveries[row], hasUser: table.has(.hasUser, row), body: body(row: row))
    item.canonical = table.has(.verified, row)
    return item
  }

  /// The item in `row`, copied out, when it may be written out (`wellFormed`): its body is read
  /// once, and checked in the copy when the row is not yet known canonical.
  func wellFormedItem(row: Int) -> PendingItem? {
    var item = item(row: row)
    guard !item.canonical else { return item }
    guard item.body.withUnsafeBytes({ wellFormed(row, body: $0) }) else { return nil }
    item.canonical = table.has(.verified, row)
    return item
  }

  package func item(seq: UInt64) -> PendingItem? { table.row(of: seq).map { item(row: $0) } }

  /// The held items with these seqs, in the given order (missing ones are skipped).
  package func items(seqs: [UInt64]) -> [PendingItem] { seqs.compactMap { item(seq: $0) } }

  package func id(row: Int) -> ItemID {
    let length = Int(table.idLengths[row])
    if length > 0 { return ItemID(client: Array(arena.bytes(at: table.locations[row], length: length))) }
    if let (high, low) = bodies.explicitID(record(row)) { return ItemID(high: high, low: low) }
    let (high, low) = IDGenerator.words(key: idKey, ms: table.savedAt[row], counter: table.seqs[row])
    return ItemID(high: high, low: low)
  }

  /// The row's record in the arena (after the client id), valid until the store next changes.
  func record(_ row: Int) -> UnsafeRawBufferPointer {
    let idLength = Int(table.idLengths[row])
    let all = arena.bytes(at: table.locations[row], length: idLength + Int(table.lengths[row]))
    return UnsafeRawBufferPointer(rebasing: all[idLength...])
  }

  /// The row's JSON body bytes, copied out.
  package func body(row: Int) -> [UInt8] {
    var out: [UInt8] = []
    bodies.decode(record(row), savedAt: table.savedAt[row], to: &out)
    return out
  }

  /// Calls `use` with the row's JSON body bytes, valid during the call (put back together in a
  /// buffer of the store's when the record holds interned parts).
  package func withBody<T>(row: Int, _ use: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
    let record = record(row)
    if StoredBody.isWhole(record) {
      return try use(UnsafeRawBufferPointer(rebasing: record[StoredBody.Reader(record).offset...]))
    }
    guard !scratchInUse else { return try body(row: row).withUnsafeBytes(use) }
    scratchInUse = true
    defer { scratchInUse = false }
    scratch.removeAll(keepingCapacity: true)
    bodies.decode(record, savedAt: table.savedAt[row], to: &scratch)
    return try scratch.withUnsafeBytes(use)
  }

  /// Calls `use` with the row's body as its record holds it (`HeldParts`), valid during the call:
  /// for writers that copy the parts where they go instead of the body put back together.
  /// (The parts are read before `use` runs, so no access to the store is held across it.)
  package func withParts<T>(row: Int, _ use: (HeldParts) -> T) -> T { use(bodies.parts(record(row))) }

  /// Reads ahead what saving bodies of these user hashes will read (`StoredBody.warm`): call before
  /// saving a batch.
  package func warm(userHashes: [UInt32]) { bodies.warm(userHashes: userHashes) }

  /// Reads ahead what `withParts` of these rows will read in the user table (call before writing a
  /// run of rows out): with many users, their cache misses overlap instead of coming one row at a time.
  /// Changes nothing (threads may call it at once); returns a sum of what it read, for the caller to keep.
  package func warmParts(rows: ArraySlice<Int>) -> UInt64 { bodies.warm(reading: userEntries(rows)) }

  /// Reads ahead what removing these rows will read and change in the user table.
  func warmRemoval(rows: [Int]) { bodies.warm(releasing: userEntries(rows[...])) }

  /// Rows read ahead at a time: enough misses to overlap, few enough to stay in the cache.
  package static let warmRun = 64

  func userEntries(_ rows: ArraySlice<Int>) -> [UInt32] {
    rows.compactMap { StoredBody.userEntry(record($0)) }
  }

  /// True when the held item `seq` is a dead letter.
  package func isDead(seq: UInt64) -> Bool { table.row(of: seq).map { table.has(.dead, $0) } ?? false }

  /// Up to `max` dead-letter rows, in seq order.
  package func deadRows(max: Int) -> [Int] {
    var rows: [Int] = []
    guard deadCount > 0 else { return rows }
    for row in table.rows where !table.has(.removed, row) && table.has(.dead, row) {
      guard wellFormed(row) else { continue }
      rows.append(row)
      if rows.count == max { break }
    }
    return rows
  }
}

/// A held body in the parts its record keeps (`StoredBody`): the body is `user + label + rest`, then,
/// when `timeFollows`, `,"time":"…"` with the item's saved time.
package struct HeldParts {
  /// The interned `,"user":{…}` member; empty when the record holds none.
  package var user: UnsafeRawBufferPointer
  /// The interned label after it (`,"name":"purchase","properties":`); empty when none.
  package var label: UnsafeRawBufferPointer
  package var rest: UnsafeRawBufferPointer
  package var timeFollows: Bool
}
