import OutboxSupport

/// Reading a held row: its item, its id, its body (put back together from its `StoredBody` record).
extension PendingStore {
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
