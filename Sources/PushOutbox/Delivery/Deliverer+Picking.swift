extension Deliverer {
  /// The next batch to send and its users: a pending split first, else the oldest available items
  /// whose users have nothing in flight. Items with no identifier become dead letters (`no_identifier`).
  func nextBatch(maxObjects: Int) -> (TrackBatch, Set<String>)? {
    let limit = max(1, min(batchLimit, maxObjects))
    if let split = nextSplit() { return split }
    var blocked = busyUsers
    for seqs in splits { blocked.formUnion(store.items.items(seqs: seqs).compactMap { $0.user?.key }) }
    var picked: [PendingItem] = []
    var noIdentifier: [(UInt64, String)] = []
    var users: Set<String> = []
    let table = store.items.table
    let cap = mode == .combined ? limit : 2 * limit
    var scanned = 0
    for row in table.rows where !table.has(.removed, row) && !table.has(.leased, row) && !table.has(.dead, row) {
      scanned += 1
      if scanned > 8192 || picked.count >= cap { break }
      let item = store.items.item(row: row)
      guard let user = item.user else {
        noIdentifier.append((item.seq, "no_identifier"))
        continue
      }
      if blocked.contains(user.key) { continue }
      picked.append(item)
      users.insert(user.key)
    }
    if !noIdentifier.isEmpty {
      store.deadLetter(noIdentifier)
      stats.deadLettered += noIdentifier.count
    }
    guard !picked.isEmpty else { return nil }
    let batches = UsersTrack.batches(
      picked, superseded: picked.supersededSeqs, defaultUser: nil, limit: limit, mode: mode)
    guard let first = batches.first else { return nil }
    let inBatch = Set(first.seqs)
    return (first, Set(picked.filter { inBatch.contains($0.seq) }.compactMap { $0.user?.key }))
  }

  /// The first pending split whose users are free, as one batch (a split is at most one batch).
  private func nextSplit() -> (TrackBatch, Set<String>)? {
    while let seqs = splits.first {
      let items = store.items.items(seqs: seqs).filter { item in
        store.items.table.row(of: item.seq).map { !store.items.table.has(.leased, $0) && !store.items.table.has(.dead, $0) }
          ?? false
      }
      guard !items.isEmpty else {
        splits.removeFirst()
        continue
      }
      let users = Set(items.compactMap { $0.user?.key })
      guard users.isDisjoint(with: busyUsers) else { return nil }
      splits.removeFirst()
      let batch = UsersTrack.batches(
        items, superseded: items.supersededSeqs, defaultUser: nil, limit: max(1, items.count), mode: .combined)
      guard let first = batch.first else { continue }
      return (first, users)
    }
    return nil
  }
}
