/// The available items a flush or a delivery request may take, in seq order: the one rule for both.
package struct AvailablePick {
  /// The rows taken, in seq order.
  package var rows: [Int] = []
  /// Their items, copied out (each body read once: checked as it is copied); none when the caller
  /// reads the rows itself (`checkedByCaller`).
  package var items: [PendingItem] = []
  /// Rows with no identifier the caller could use: they are dead letters (`no_identifier`) now.
  package var noIdentifier: [Int] = []
}

extension Store {
  /// Picks up to `max` available items (pending, not leased, not dead, well formed), looking at no
  /// more than `visitLimit` of them. An item `identified` rejects can never be sent: it becomes a
  /// dead letter (`no_identifier`), so a drain loop ends (`requeueDeadLetters` brings it back). An
  /// item `wanted` rejects (its user is busy) is passed over and stays pending.
  ///
  /// `checkedByCaller`: the caller reads the taken rows itself and checks each event and custom
  /// attribute as it reads its body (`HeldItems.wellFormed(_:)` on any it cannot read), so a loaded
  /// body is read once, not twice; no item is copied out. User attributes are still checked here: a
  /// flush lets a later one supersede an earlier one unread.
  package func pickAvailable(
    max: Int, visitLimit: Int = Int.max, checkedByCaller: Bool = false, identified: (Int) -> Bool,
    wanted: (Int) -> Bool = { _ in true }
  ) -> AvailablePick {
    var pick = AvailablePick()
    var visited = 0
    // `items.table` each time, not a local copy: `wellFormed` may mark the row, and a copy held
    // across that would make the table copy its flags.
    for row in items.table.rows where items.isAvailable(row: row) {
      visited += 1
      if visited > visitLimit || pick.rows.count >= max { break }
      let item: PendingItem?
      if checkedByCaller {
        item = nil
        guard items.table.kind(row) != .userAttribute || items.wellFormed(row) else { continue }
      } else {
        item = items.wellFormedItem(row: row)
        guard item != nil else { continue }
      }
      if !identified(row) {
        guard !checkedByCaller || items.wellFormed(row) else { continue }
        pick.noIdentifier.append(row)
      } else if wanted(row) {
        pick.rows.append(row)
        if let item { pick.items.append(item) }
      }
    }
    if !pick.noIdentifier.isEmpty { deadLetter(pick.noIdentifier.map { (items.table.seqs[$0], "no_identifier") }) }
    return pick
  }
}

extension HeldItems {
  /// True when `row` has `flag`. Other modules read rows through these, not `table`: there, reading
  /// `table` returns a copy of the whole struct (every column retained, then released) for each call.
  @inline(__always)
  package func has(_ flag: ItemTable.Flags, row: Int) -> Bool { table.has(flag, row) }

  /// The seq of the item in `row`.
  @inline(__always)
  package func seq(row: Int) -> UInt64 { table.seqs[row] }

  /// True when the row's body is known canonical (a save wrote it, or a check accepted it since it loaded).
  @inline(__always)
  package func isCanonical(row: Int) -> Bool { table.has(.verified, row) }

  /// The kind of the item in `row`.
  @inline(__always)
  package func kind(row: Int) -> ItemKind { table.kind(row) }

  /// When the item in `row` was saved (ms since the epoch).
  @inline(__always)
  package func savedAt(row: Int) -> Int64 { table.savedAt[row] }

  /// The row of held item `seq`, if any.
  package func row(of seq: UInt64) -> Int? { table.row(of: seq) }

  /// True when the row holds an item that is not removed, leased or a dead letter.
  fileprivate func isAvailable(row: Int) -> Bool {
    !table.has(.removed, row) && !table.has(.leased, row) && !table.has(.dead, row)
  }
}
