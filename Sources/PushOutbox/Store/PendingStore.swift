/// Why the store refused a change. Mapped to JSON-RPC errors in one place (`MethodTable`).
package enum StoreError: Error, Sendable, Equatable {
  case storeFull(limit: String, value: Int)
  case itemTooLarge(bytes: Int, limit: Int)
  case leaseNotFound(String)
  case storageUnavailable(String)
}

/// Limits enforced with an error, never by evicting items.
package struct StoreLimits: Sendable {
  package var maxPending = Int.max
  package var maxPendingBytes = Int.max
  package var maxItemBytes = Int.max
  package init() {}
}

/// The pending items, in `seq` order, held in memory.
///
/// Single-threaded by design: the request loop owns it. Snapshots take a copy (`snapshotState`),
/// which shares storage until the next change.
package struct PendingStore: Sendable {
  /// `items[head...]` are held; the prefix before `head` was removed and awaits compaction.
  private(set) var items: [PendingItem] = []
  private var head = 0
  package private(set) var nextSeq: UInt64 = 1
  package private(set) var bytes = 0
  package private(set) var counts: [Int] = Array(repeating: 0, count: ItemKind.allCases.count)
  package private(set) var leasedCount = 0
  /// Bumped by every change; snapshots record the version they saw.
  package private(set) var version: UInt64 = 0
  private var clientIDs: [String: UInt64] = [:]
  package var limits = StoreLimits()

  package init() {}

  package var count: Int { items.count - head }
  /// Index of the first held item in `items`.
  var firstHeld: Int { head }
  package var held: ArraySlice<PendingItem> { items[head...] }

  // MARK: - Saving

  /// Takes the next sequence number. Numbers are never reused, even when a save is rolled back.
  package mutating func takeSeq() -> UInt64 {
    defer { nextSeq += 1 }
    return nextSeq
  }

  /// Checks the limits an item of `itemBytes` must meet before it is appended.
  package func admit(itemBytes: Int) throws(StoreError) {
    if itemBytes > limits.maxItemBytes { throw .itemTooLarge(bytes: itemBytes, limit: limits.maxItemBytes) }
    if count >= limits.maxPending { throw .storeFull(limit: "max-pending", value: limits.maxPending) }
    if bytes + itemBytes > limits.maxPendingBytes {
      throw .storeFull(limit: "max-pending-bytes", value: limits.maxPendingBytes)
    }
  }

  /// Appends an item whose seq came from `takeSeq` (or from recovery, which also advances `nextSeq`).
  package mutating func append(_ item: PendingItem, clientID: Bool) {
    items.append(item)
    if item.seq >= nextSeq { nextSeq = item.seq + 1 }
    bytes += item.byteCount
    counts[Int(item.kind.rawValue)] += 1
    if clientID { clientIDs[item.id] = item.seq }
    version &+= 1
  }

  /// The held item saved with the client-supplied id `id`, if any.
  package func item(clientID id: String) -> PendingItem? {
    guard let seq = clientIDs[id], let index = index(of: seq) else { return nil }
    return items[index]
  }

  // MARK: - Handing out

  /// Up to `max` held, unleased items that `eligible` accepts, in seq order. Unleased items that
  /// `eligible` refused on the way are added to `skipped`.
  package func firstAvailable(
    max: Int, skipped: inout [PendingItem], where eligible: (PendingItem) -> Bool
  ) -> [PendingItem] {
    var picked: [PendingItem] = []
    for item in items[head...] where !item.leased {
      guard eligible(item) else {
        skipped.append(item)
        continue
      }
      picked.append(item)
      if picked.count == max { break }
    }
    return picked
  }

  /// Removes exactly the items with these seqs (sorted ascending). Returns how many were held.
  @discardableResult
  package mutating func remove(seqs: [UInt64]) -> Int {
    guard !seqs.isEmpty else { return 0 }
    let wanted = Set(seqs)
    var removed = 0
    var isPrefix = true
    for (offset, item) in items[head...].enumerated() {
      if offset >= seqs.count { break }
      if item.seq != seqs[offset] { isPrefix = false; break }
    }
    if isPrefix && count >= seqs.count {
      for item in items[head..<(head + seqs.count)] { forget(item) }
      removed = seqs.count
      head += seqs.count
      compactIfNeeded()
    } else {
      var kept: [PendingItem] = []
      kept.reserveCapacity(count)
      for item in items[head...] {
        if wanted.contains(item.seq) { forget(item); removed += 1 } else { kept.append(item) }
      }
      items = kept
      head = 0
    }
    version &+= 1
    return removed
  }

  /// Marks items as leased or not; when a lease ends without an ack, their delivery count rises.
  package mutating func setLeased(_ seqs: [UInt64], _ leased: Bool, countDelivery: Bool = false) {
    for seq in seqs {
      guard let index = index(of: seq), items[index].leased != leased else { continue }
      items[index].leased = leased
      leasedCount += leased ? 1 : -1
      if countDelivery { items[index].deliveryCount += 1 }
    }
    version &+= 1
  }

  /// The held items with these seqs, in order (missing ones are skipped).
  package func items(seqs: [UInt64]) -> [PendingItem] {
    seqs.compactMap { seq in index(of: seq).map { items[$0] } }
  }

  // MARK: - Internals

  private func index(of seq: UInt64) -> Int? {
    var low = head
    var high = items.count
    while low < high {
      let mid = (low + high) / 2
      if items[mid].seq < seq { low = mid + 1 } else { high = mid }
    }
    return low < items.count && items[low].seq == seq ? low : nil
  }

  private mutating func forget(_ item: PendingItem) {
    bytes -= item.byteCount
    counts[Int(item.kind.rawValue)] -= 1
    if item.leased { leasedCount -= 1 }
    if clientIDs[item.id] == item.seq { clientIDs[item.id] = nil }
  }

  private mutating func compactIfNeeded() {
    if head > 4096 && head * 2 > items.count {
      items.removeFirst(head)
      head = 0
    }
  }
}

extension PendingStore {
  /// Never hand out a seq below `next` (after loading a snapshot whose newest items were flushed).
  package mutating func advanceSeq(to next: UInt64) {
    if next > nextSeq { nextSeq = next }
  }
}

extension PendingStore {
  /// True when an item with this seq is held.
  package func contains(seq: UInt64) -> Bool {
    var low = 0
    var high = items.count
    while low < high {
      let mid = (low + high) / 2
      if items[mid].seq < seq { low = mid + 1 } else { high = mid }
    }
    return low < items.count && items[low].seq == seq && low >= firstHeld
  }
}
