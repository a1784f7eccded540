package import OutboxDomain
package import OutboxJSON
package import OutboxStore
package import OutboxSupport

extension Deliverer {
  /// The items of one request, chosen on the loop thread without building any JSON: the body is
  /// built from them on the background queue.
  struct Cut: Sendable {
    var items: [PendingItem] = []
    var superseded: Set<UInt64> = []
    /// Every item the request accounts for (its objects and the superseded values they replace).
    var seqs: [UInt64] = []
    var objects = 0
    var users: Set<UserNumber> = []
  }

  /// How long a scan that found nothing keeps the next ones from running (without an answer).
  static let quietSeconds = 0.005

  /// The next request's items: a pending split first, else the oldest available items whose users
  /// have nothing in flight. Items with no identifier become dead letters (`no_identifier`).
  func nextCut(maxObjects: Int) -> Cut? {
    if let split = nextSplit() { return split }
    let now = Clock.monotonicSeconds()
    let seen = (changes: changes, count: store.count)
    if let quiet = quietSeen, quiet == seen, now < quietUntil { return nil }
    let found = scan(maxObjects: maxObjects)
    if found == nil { (quietSeen, quietUntil) = (seen, now + Self.quietSeconds) }
    return found
  }

  /// The oldest available items (at most 2,048 rows looked at) whose users have nothing in flight.
  private func scan(maxObjects: Int) -> Cut? {
    let limit = max(1, min(batchLimit, maxObjects))
    var blocked = busyUsers
    for seqs in splits { blocked.formUnion(seqs.compactMap(user(seq:))) }
    var picked: [PendingItem] = []
    var noIdentifier: [(UInt64, String)] = []
    let table = store.items.table
    let cap = mode == .combined ? limit : 2 * limit
    var visited = 0
    for row in table.rows where !table.has(.removed, row) && !table.has(.leased, row) && !table.has(.dead, row) {
      visited += 1
      if visited > 2048 || picked.count >= cap { break }
      guard store.items.wellFormed(row) else { continue }
      let seq = table.seqs[row]
      guard table.has(.hasUser, row), let key = user(seq: seq) else {
        noIdentifier.append((seq, "no_identifier"))
        continue
      }
      if !blocked.contains(key) { picked.append(store.items.item(row: row)) }
    }
    if !noIdentifier.isEmpty {
      store.deadLetter(noIdentifier)
      stats.deadLettered += noIdentifier.count
    }
    return picked.isEmpty ? nil : cut(picked, limit: limit, mode: mode)
  }

  /// The first body's worth of `items` (in seq order), as `UsersTrack.batches` would cut it.
  func cut(_ items: [PendingItem], limit: Int, mode: TrackBatchMode) -> Cut {
    var cut = Cut()
    cut.superseded = items.supersededSeqs
    var carried: [PendingItem] = []
    var attributes = 0
    var events = 0
    for item in items {
      if cut.superseded.contains(item.seq) {
        carried.append(item)
        continue
      }
      let isEvent = item.kind == .customEvent
      let full = mode == .combined ? attributes + events >= limit : (isEvent ? events : attributes) >= limit
      if full { break }
      if isEvent { events += 1 } else { attributes += 1 }
      cut.items += carried + [item]
      carried.removeAll()
    }
    cut.seqs = cut.items.map(\.seq)
    cut.objects = attributes + events
    cut.users = Set(cut.seqs.compactMap(user(seq:)))
    return cut
  }

  /// The number of the item's user (its body read once per item, then remembered); nil without one.
  func user(seq: UInt64) -> UserNumber? {
    if let number = userOfSeq[seq] { return number == UserNumbers.none ? nil : number }
    let items = store.items
    guard let row = items.table.row(of: seq) else { return nil }
    let key = UserKey.of(body: items.body(row: row)) { items.item(row: row) }
    if max(userOfSeq.count, users.count) > 1 << 20 && flights.isEmpty && splits.isEmpty {  // nothing holds a number
      userOfSeq.removeAll()
      users = UserNumbers()
    }
    let number = key.map { users.number(for: $0) } ?? UserNumbers.none
    userOfSeq[seq] = number
    return number == UserNumbers.none ? nil : number
  }

  /// The first pending split whose users are free: all of its items, in one request.
  private func nextSplit() -> Cut? {
    while let seqs = splits.first {
      let table = store.items.table
      let items = store.items.items(seqs: seqs).filter { item in
        table.row(of: item.seq).map { !table.has(.leased, $0) && !table.has(.dead, $0) } ?? false
      }
      guard !items.isEmpty else {
        splits.removeFirst()
        continue
      }
      guard Set(items.compactMap { user(seq: $0.seq) }).isDisjoint(with: busyUsers) else { return nil }
      splits.removeFirst()
      return cut(items, limit: Int.max, mode: .perArray)
    }
    return nil
  }
}
