package import OutboxJSON
package import OutboxSupport

/// The answer to a save, before it is rendered: the item's id and seq, how many items are held,
/// and whether the reply must wait for the journal commit.
package struct SaveReceipt: Sendable {
  package var id: ItemID
  package var seq: UInt64
  package var pending: Int
  package var duplicate = false
  /// True while the item's journal record is not written: the reply waits for the commit's outcome.
  package var awaitsCommit = false
}

/// The pending items and everything that keeps them. Methods change the store only through here:
/// save, drain, lease, ack, release and commit. The journal behind it is private.
package final class Store {
  package let items = HeldItems()
  package private(set) var leases: [Lease] = []
  /// Flush ids acked or drained recently, so a repeated ack is answered `acked: 0` (bounded).
  package private(set) var finished: [String] = []
  /// Seqs saved since the last commit (the newest held); taken back if the commit fails.
  private var uncommitted: [UInt64] = []
  /// Problems found in stored data after start-up (`status.recovery` lists them with recovery's).
  package private(set) var notices: [JSONValue] = []
  /// Bumped by every change; the disk layer compares it to decide whether it is dirty.
  package private(set) var version: UInt64 = 0
  var journal: Journal?
  /// `--max-store-bytes`, when set.
  package let cap: StoreCap?
  /// Bytes of the store's files other than the segments (checkpoint, quarantine, LOCK), and of the
  /// checkpoint alone: measured by `FileKeeper` at start and after each snapshot.
  package internal(set) var filesBesideJournal = 0
  package internal(set) var checkpointBytes = 0

  package init(limits: StoreLimits = StoreLimits()) {
    items.limits = limits
    cap = limits.maxStoreBytes.map(StoreCap.init(max:))
  }

  /// Items pending (leased ones included); dead letters are held but not pending.
  package var count: Int { items.count - items.deadCount }
  var isDurable: Bool { journal != nil }

  // MARK: - Saving

  /// Stores one item, or answers a repeated client id with the original item.
  package func save(
    kind: ItemKind, id: ItemID, savedAt: Int64, hasUser: Bool, body: UnsafeRawBufferPointer, parts: BodyParts? = nil
  ) throws(StoreError) -> SaveReceipt {
    if !id.client.isEmpty, let seq = items.seq(clientID: id.client) {
      var receipt = SaveReceipt(id: id, seq: seq, pending: count, duplicate: true)
      receipt.awaitsCommit = seq >= (uncommitted.first ?? UInt64.max)
      return receipt
    }
    try admit(bodyBytes: body.count, clientIDBytes: id.clientLength)
    let seq = items.takeSeq()
    items.append(seq: seq, id: id, kind: kind, savedAt: savedAt, hasUser: hasUser, body: body, parts: parts)
    version &+= 1
    guard let journal else { return SaveReceipt(id: id, seq: seq, pending: count) }
    journal.appendItem(seq: seq, savedAt: savedAt, kind: kind, hasUser: hasUser, id: id, body: body)
    uncommitted.append(seq)
    return SaveReceipt(id: id, seq: seq, pending: count, awaitsCommit: true)
  }

  /// Takes back items saved since the last commit, when a group saved whole or not at all (an
  /// `importLegacy` dictionary) cannot be finished: out of memory, and a remove record after their
  /// add records, so a replay of the journal drops them too.
  package func withdraw(_ seqs: [UInt64]) {
    remove(seqs)
    uncommitted.removeAll { seqs.contains($0) }
  }

  /// Saves are waiting for the next commit.
  package var hasUncommittedSaves: Bool { !uncommitted.isEmpty }

  /// Writes what was recorded since the last commit. On failure the burst's saves are taken back
  /// out of memory and off the file, and the error says why; nothing else changes.
  package func commit() -> FileError? {
    defer { uncommitted.removeAll(keepingCapacity: true) }
    let malformed = items.takeMalformed()
    if !malformed.isEmpty {
      let message =
        "\(malformed.count) stored items were not well-formed JSON and were dropped (seqs \(malformed.prefix(10)))"
      Log.stderr("push-outbox: error: " + message)
      notices.append(
        .object([
          JSONMember("code", .string("malformedItemDropped")), JSONMember("message", .string(message)),
          JSONMember("seqs", .array(malformed.prefix(100).map { .int(Int64($0)) })),
        ]))
      remove(malformed)
    }
    guard let journal, journal.hasPendingRecords else { return nil }
    do {
      try journal.commit()
      lastCommitFailed = false
      return nil
    } catch {
      lastCommitFailed = true
      lastCommitError = "\(error)"
      items.rollBack(seqs: uncommitted)
      version &+= 1
      // Records that could not be cut back off the file must not come back at the next start.
      if journal.lastCutFailed { journal.append(.remove(uncommitted), seq: items.takeSeq()) }
      return error
    }
  }

  /// The last journal write (or its fsync with `--fsync always`) failed.
  package private(set) var lastCommitFailed = false
  /// What the last failed journal write said.
  package private(set) var lastCommitError: String?

  /// True when a save made since the last commit is waiting to be written.
  var hasUncommitted: Bool { !uncommitted.isEmpty }

  // MARK: - Handing out

  /// Removes exactly these items (a drain). Call only after a commit: drained items must be durable.
  package func drain(_ seqs: [UInt64], flushId: String) {
    remove(seqs)
    rememberFinished(flushId)
  }

  /// Hides the items until `ack`, `release` or expiry, durably.
  package func lease(_ lease: Lease) {
    items.setLeased(lease.seqs, true)
    leases.append(lease)
    version &+= 1
    journal?.append(.lease(lease), seq: items.takeSeq())
  }

  /// The live lease with this flush id (compared by bytes).
  package func lease(flushId: String) -> Lease? {
    leases.first { $0.flushId.utf8.elementsEqual(flushId.utf8) }
  }

  /// Removes exactly the leased items. A repeat after success acks 0; an unknown id is an error.
  package func ack(_ flushId: String) throws(StoreError) -> Int {
    guard let n = leases.firstIndex(where: { $0.flushId.utf8.elementsEqual(flushId.utf8) }) else {
      if finished.contains(where: { $0.utf8.elementsEqual(flushId.utf8) }) { return 0 }
      throw .leaseNotFound(flushId)
    }
    let lease = leases.remove(at: n)
    let acked = lease.seqs.filter(items.contains(seq:)).count
    remove(lease.seqs)
    journal?.append(.leaseEnd(flushId: lease.flushId, outcome: .acked, counts: []), seq: items.takeSeq())
    rememberFinished(lease.flushId)
    return acked
  }

  /// Returns a live lease's items to pending, one delivery more. Returns how many.
  package func release(_ flushId: String) throws(StoreError) -> Int {
    guard let n = leases.firstIndex(where: { $0.flushId.utf8.elementsEqual(flushId.utf8) }) else {
      throw .leaseNotFound(flushId)
    }
    return end(leases.remove(at: n), .released)
  }

  /// When the next lease ends (ms since the epoch), if any.
  package var nextLeaseExpiry: Int64? { leases.lazy.map(\.expiresAt).min() }

  /// Ends every lease whose time is up: its items are pending again, one delivery more.
  @discardableResult
  package func expireLeases(now: Int64) -> [Lease] {
    guard leases.contains(where: { now >= $0.expiresAt }) else { return [] }  // the loop asks often
    let expired = leases.filter { now >= $0.expiresAt }
    leases.removeAll { now >= $0.expiresAt }
    for lease in expired { end(lease, .expired) }
    return expired
  }

  @discardableResult
  private func end(_ lease: Lease, _ outcome: LeaseOutcome) -> Int {
    let counts = items.setLeased(lease.seqs, false, countDelivery: true)
    version &+= 1
    if let journal {
      for (seq, _) in counts { journal.noteChanged(seq) }
      journal.append(.leaseEnd(flushId: lease.flushId, outcome: outcome, counts: counts), seq: items.takeSeq())
    }
    return counts.count
  }

  // MARK: - Delivery and dead letters

  /// Ends a delivery lease with each item's outcome: `delivered` leave the store, `dead` become dead
  /// letters with their reason, and the rest are pending again, one delivery more. Durable once committed.
  package func settle(_ flushId: String, delivered: [UInt64], dead: [(UInt64, String)]) {
    guard let n = leases.firstIndex(where: { $0.flushId.utf8.elementsEqual(flushId.utf8) }) else { return }
    let lease = leases.remove(at: n)
    remove(delivered)
    let deadSeqs = dead.map(\.0)
    items.setLeased(deadSeqs, false)
    var recorded: [(UInt64, String)] = []
    for (seq, reason) in dead where items.contains(seq: seq) {
      items.setDead([seq], reason: reason)
      recorded.append((seq, reason))
    }
    let counts = items.setLeased(lease.seqs, false, countDelivery: true)
    version &+= 1
    guard let journal else { return }
    if !recorded.isEmpty {
      for (seq, _) in recorded { journal.noteChanged(seq) }
      journal.append(.deadLetter(recorded), seq: items.takeSeq())
    }
    for (seq, _) in counts { journal.noteChanged(seq) }
    journal.append(.leaseEnd(flushId: lease.flushId, outcome: .released, counts: counts), seq: items.takeSeq())
  }

  /// Makes unleased pending items dead letters (items no request can carry, such as `no_identifier`).
  func deadLetter(_ entries: [(UInt64, String)]) {
    var recorded: [(UInt64, String)] = []
    for (seq, reason) in entries where !items.isDead(seq: seq) && !items.setDead([seq], reason: reason).isEmpty {
      recorded.append((seq, reason))
    }
    guard !recorded.isEmpty else { return }
    version &+= 1
    guard let journal else { return }
    for (seq, _) in recorded { journal.noteChanged(seq) }
    journal.append(.deadLetter(recorded), seq: items.takeSeq())
  }

  /// Returns dead letters to pending. Returns the seqs requeued. Refused, changing nothing, when its
  /// journal record would pass `--max-store-bytes`.
  @discardableResult
  package func requeue(_ seqs: [UInt64]) throws(StoreError) -> [UInt64] {
    let candidates = seqs.filter(items.isDead(seq:))
    guard !candidates.isEmpty else { return [] }
    try admitFiles(SegmentFormat.recordHeaderSize + 4 + 8 * candidates.count)
    let changed = items.setDead(candidates, reason: nil)
    guard !changed.isEmpty else { return [] }
    version &+= 1
    guard let journal else { return changed }
    for seq in changed { journal.noteChanged(seq) }
    journal.append(.requeue(changed), seq: items.takeSeq())
    return changed
  }

  /// Deletes dead letters for good. Returns how many.
  package func dropDead(_ seqs: [UInt64]) -> Int {
    let dead = seqs.filter(items.isDead(seq:))
    remove(dead)
    return dead.count
  }

  private func remove(_ seqs: [UInt64]) {
    let held = items.remove(seqs: seqs)
    guard !held.isEmpty else { return }
    version &+= 1
    guard let journal else { return }
    for seq in held { journal.noteRemoved(seq) }
    journal.append(.remove(held), seq: items.takeSeq())
  }

  private func rememberFinished(_ flushId: String) {
    finished.append(flushId)
    if finished.count > 256 { finished.removeFirst(finished.count - 256) }
  }

  // MARK: - Recovery

  /// Installs what recovery rebuilt: live leases, and the journal to write from now on.
  func restore(leases recovered: [Lease], finished: [String], journal: Journal) {
    self.finished = Array(finished.suffix(256))
    for lease in recovered {
      let held = lease.seqs.filter(items.contains(seq:))
      guard !held.isEmpty else { continue }
      var kept = lease
      kept.seqs = held
      items.setLeased(held, true)
      leases.append(kept)
    }
    self.journal = journal
  }

  /// Marks the store changed (recovery found something a snapshot must settle).
  func markDirty() { version &+= 1 }
}
