/// The held items as a struct of arrays (`Column`s): one row per item, no heap object per item or per field.
///
/// The bytes of a row (client id, then the body's record, `StoredBody`) live in the `Arena`. Rows stay in seq order;
/// removing rows at the head moves `head`, removing rows elsewhere leaves a tombstone that a later
/// compaction of the arrays drops, so every removal costs O(removed) amortized.
package struct ItemTable {
  package struct Flags: OptionSet, Sendable {
    package let rawValue: UInt8
    package init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The save named a user.
    package static let hasUser = Flags(rawValue: 1 << 2)
    /// A lease holds the item.
    package static let leased = Flags(rawValue: 1 << 3)
    /// The row was removed and awaits compaction of the arrays.
    package static let removed = Flags(rawValue: 1 << 4)
    /// The id is the client's (its bytes precede the body), not a generated one.
    package static let clientID = Flags(rawValue: 1 << 5)
    /// Braze refused the item (or it has no identifier): a dead letter, out of the pending set.
    package static let dead = Flags(rawValue: 1 << 6)
    /// The body is known to be canonical JSON members (`CanonicalJSON.isMembers`): saved here, by the
    /// writer, or checked since loading. A well-formed body that is not canonical is never marked.
    static let verified = Flags(rawValue: 1 << 7)
    static let kindMask: UInt8 = 0b11
  }

  package private(set) var seqs = Column<UInt64>()
  package private(set) var savedAt = Column<Int64>()
  private(set) var locations = Column<ArenaLocation>()
  /// Record length in bytes; the client id, when there is one, is `idLengths` bytes before it.
  private(set) var lengths = Column<UInt32>()
  private(set) var idLengths = Column<UInt8>()
  package private(set) var flags = Column<UInt8>()
  package var deliveries = Column<UInt32>()
  /// Rows before `head` are gone.
  private(set) var head = 0
  private(set) var tombstones = 0

  package init() {}

  /// Rows from `head` on, tombstones included.
  package var rows: Range<Int> { head..<seqs.count }
  var liveCount: Int { seqs.count - head - tombstones }

  package mutating func reserve(_ n: Int) {
    seqs.reserveCapacity(n)
    savedAt.reserveCapacity(n)
    locations.reserveCapacity(n)
    lengths.reserveCapacity(n)
    idLengths.reserveCapacity(n)
    flags.reserveCapacity(n)
    deliveries.reserveCapacity(n)
  }

  package mutating func append(
    seq: UInt64, savedAt time: Int64, location: ArenaLocation, length: Int, clientIDLength: Int, kind: ItemKind,
    flags extra: Flags, deliveries count: UInt32
  ) {
    seqs.append(seq)
    savedAt.append(time)
    locations.append(location)
    lengths.append(UInt32(length))
    idLengths.append(UInt8(clientIDLength))
    var all = extra.rawValue | kind.rawValue
    if clientIDLength > 0 { all |= Flags.clientID.rawValue }
    flags.append(all)
    deliveries.append(count)
  }

  @inline(__always) package func kind(_ row: Int) -> ItemKind {
    ItemKind(rawValue: flags[row] & Flags.kindMask) ?? .customEvent
  }

  @inline(__always) package func has(_ flag: Flags, _ row: Int) -> Bool { flags[row] & flag.rawValue != 0 }

  package mutating func set(_ flag: Flags, _ on: Bool, _ row: Int) {
    if on { flags[row] |= flag.rawValue } else { flags[row] &= ~flag.rawValue }
  }

  /// The first row (from `head`) whose seq is at least `seq`.
  /// Branch-free halving: a drain looks up every seq it removes, and mispredicted branches were
  /// most of a lookup's time.
  package func lowerBound(_ seq: UInt64) -> Int {
    seqs.withUnsafeBufferPointer { seqs in
      var low = head
      var count = seqs.count - head
      guard count > 0 else { return low }
      while count > 1 {  // the answer is in low...low + count
        let half = count / 2
        low = seqs[low + half - 1] < seq ? low + half : low
        count -= half
      }
      return seqs[low] < seq ? low + 1 : low
    }
  }

  /// The row holding `seq`, if it is held.
  package func row(of seq: UInt64) -> Int? {
    let low = lowerBound(seq)
    guard low < seqs.count, seqs[low] == seq, !has(.removed, low) else { return nil }
    return low
  }

  /// The row holding `seq`, if it is held, looked for at `guess` first: a drain removes rows in seq
  /// order, so the row after the last one found is most often the next (no search then).
  @inline(__always)
  func row(of seq: UInt64, guess: Int) -> Int? {
    guard guess >= head && guess < seqs.count && seqs[guess] == seq else { return row(of: seq) }
    return has(.removed, guess) ? nil : guess
  }

  /// Rows in `rows` that are held (not removed): the truth a snapshot lists segments by.
  func heldCount(in rows: Range<Int>) -> Int {
    guard tombstones > 0 else { return rows.count }
    let mask = Flags.removed.rawValue
    return flags.withUnsafeBufferPointer { flags in
      var removed = 0
      for row in rows where flags[row] & mask != 0 { removed &+= 1 }
      return rows.count - removed
    }
  }

  /// Marks a row removed; the head moves past removed rows at once. True when that renumbered the
  /// rows (the table was emptied or compacted): rows found before are stale.
  @discardableResult
  package mutating func remove(_ row: Int) -> Bool {
    set(.removed, true, row)
    tombstones += 1
    while head < seqs.count && has(.removed, head) {
      head += 1
      tombstones -= 1
    }
    if head == seqs.count {
      clear()
      return true
    }
    return compactIfNeeded()
  }

  /// Drops the last row (rolling back a save whose journal write failed).
  package mutating func removeLast() {
    seqs.removeLast(); savedAt.removeLast(); locations.removeLast(); lengths.removeLast()
    idLengths.removeLast(); flags.removeLast(); deliveries.removeLast()
    if head > seqs.count { head = seqs.count }
  }

  private mutating func clear() {
    self = ItemTable()
  }

  /// Drops the removed prefix and tombstones once they outweigh the live rows.
  private mutating func compactIfNeeded() -> Bool {
    let dead = head + tombstones
    guard dead > 4096 && dead * 2 > seqs.count else { return false }
    // Only the head went: the rest is one block. Else the rows without tombstones, one at a time.
    let block = rows
    let kept = tombstones > 0 ? rows.filter { !has(.removed, $0) } : nil
    func keep<T>(_ column: Column<T>) -> Column<T> { kept.map { column.selecting($0) } ?? column.selecting(block) }
    seqs = keep(seqs)
    savedAt = keep(savedAt)
    locations = keep(locations)
    lengths = keep(lengths)
    idLengths = keep(idLengths)
    flags = keep(flags)
    deliveries = keep(deliveries)
    head = 0
    tombstones = 0
    return true
  }
}
