/// The available items a flush or a delivery request may take, in seq order: the one rule for both.
package struct AvailablePick {
  /// The rows taken, in seq order.
  package var rows: [Int] = []
  /// Their items, copied out (each body read once: checked as it is copied).
  package var items: [PendingItem] = []
  /// Rows with no identifier the caller could use: they are dead letters (`no_identifier`) now.
  package var noIdentifier: [Int] = []
}

extension Store {
  /// Picks up to `max` available items (pending, not leased, not dead, well formed), looking at no
  /// more than `visitLimit` of them. An item `identified` rejects can never be sent: it becomes a
  /// dead letter (`no_identifier`), so a drain loop ends (`requeueDeadLetters` brings it back). An
  /// item `wanted` rejects (its user is busy) is passed over and stays pending.
  package func pickAvailable(
    max: Int, visitLimit: Int = Int.max, identified: (Int) -> Bool, wanted: (Int) -> Bool = { _ in true }
  ) -> AvailablePick {
    var pick = AvailablePick()
    var visited = 0
    // `items.table` each time, not a local copy: `wellFormed` may mark the row, and a copy held
    // across that would make the table copy its flags.
    for row in items.table.rows where items.isAvailable(row: row) {
      visited += 1
      if visited > visitLimit || pick.rows.count >= max { break }
      guard let item = items.wellFormedItem(row: row) else { continue }
      if !identified(row) {
        pick.noIdentifier.append(row)
      } else if wanted(row) {
        pick.rows.append(row)
        pick.items.append(item)
      }
    }
    if !pick.noIdentifier.isEmpty { deadLetter(pick.noIdentifier.map { (items.table.seqs[$0], "no_identifier") }) }
    return pick
  }
}

extension PendingStore {
  /// True when `row` has `flag`. Other modules read rows through these, not `table`: there, reading
  /// `table` returns a copy of the whole struct (every column retained, then released) for each call.
  @inline(__always)
  package func has(_ flag: ItemTable.Flags, row: Int) -> Bool { table.has(flag, row) }

  /// The seq of the item in `row`.
  @inline(__always)
  package func seq(row: Int) -> UInt64 { table.seqs[row] }

  /// The row of held item `seq`, if any.
  package func row(of seq: UInt64) -> Int? { table.row(of: seq) }

  /// True when the row holds an item that is not removed, leased or a dead letter.
  fileprivate func isAvailable(row: Int) -> Bool {
    !table.has(.removed, row) && !table.has(.leased, row) && !table.has(.dead, row)
  }
}
