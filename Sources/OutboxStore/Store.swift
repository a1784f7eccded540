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
  /// Seqs whose records are being written off the loop's thread (`beginCommit`); taken back, with
  /// `uncommitted`, if that write fails.
  private var writing: [UInt64] = []
  /// Saves taken back after a failed write, until `clearRefusedSaves`: their replies are refusals,
  /// whichever commit settles them.
  private var refusedSaves: Set<UInt64> = []
  /// The outcome of the last write that landed off the loop's thread, until `takeWritten`.
  private var written: FileError?? = nil
  /// Problems found in stored data after start-up (`status.recovery` lists them with recovery's).
  package private(set) var notices: [JSONValue] = []
  /// Bumped by every change; the disk layer compares it to decide whether it is dirty.
  package private(set) var version: UInt64 = 0
  var journal: Journal? {
    didSet {
      savingJournal = journal.map(Unmanaged.passUnretained)
      if let writeExecutor { journal?.execute = writeExecutor }
    }
  }
  /// Where the journal's writes off the loop's thread run (`writeJournal(on:)`).
  private var writeExecutor: Journal.Executor?
  /// `journal`, for the hot save: reached without a reference count (the store holds it).
  private var savingJournal: Unmanaged<Journal>?
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
      receipt.awaitsCommit = seq >= (writing.first ?? uncommitted.first ?? UInt64.max)
      return receipt
    }
    try admit(bodyBytes: body.count, clientIDBytes: id.clientLength)
    let seq = items.takeSeq()
    items.append(seq: seq, id: id, kind: kind, savedAt: savedAt, hasUser: hasUser, body: body, parts: parts)
    version &+= 1
    guard let savingJournal else { return SaveReceipt(id: id, seq: seq, pending: count) }
    savingJournal._withUnsafeGuaranteedRef {
      $0.appendItem(seq: seq, savedAt: savedAt, kind: kind, hasUser: hasUser, id: id, body: body)
    }
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
    // A failed write in flight takes this commit's saves with it: its failure is this commit's.
    var landedFailure: FileError? = nil
    if case .some(.some(let failure)) = settleWrite() { landedFailure = failure }
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
    guard let journal, journal.hasPendingRecords else { return landedFailure }
    do {
      try journal.commit()
      if landedFailure == nil { lastCommitFailed = false }
      return landedFailure
    } catch {
      takeBack(uncommitted, after: error, removing: journal.lastCutFailed ? uncommitted : [])
      return error
    }
  }

  /// After a failed write: the saves are taken back out of memory, and their replies refused.
  /// `removing`: those whose records could not be cut back off the file; a remove record keeps them
  /// from coming back at the next start.
  private func takeBack(_ seqs: [UInt64], after error: FileError, removing: [UInt64]) {
    lastCommitFailed = true
    lastCommitError = "\(error)"
    writeFailures += 1
    items.rollBack(seqs: seqs)
    refusedSaves.formUnion(seqs)
    version &+= 1
    if !removing.isEmpty, let journal { journal.append(.remove(removing), seq: items.takeSeq()) }
  }

  // MARK: - Writing off the loop's thread

  /// Starts writing what was recorded since the last commit on the journal's writer thread, and
  /// returns true: the replies that wait for it wait for `takeWritten`. False, with nothing
  /// started, when there is nothing to write or it cannot start now (`commit` then writes it).
  package func beginCommit() -> Bool {
    guard !items.hasMalformed, let journal, writing.isEmpty, written == nil, journal.beginCommit() else {
      return false
    }
    swap(&writing, &uncommitted)
    lastCommitFailed = false
    return true
  }

  /// Runs the journal's writes off the loop's thread through `executor` (by default, a queue of
  /// their own).
  package func writeJournal(on executor: @escaping Journal.Executor) {
    writeExecutor = executor
    journal?.execute = executor
  }

  /// True while a write started by `beginCommit` is in the air: a `commit` now would wait for it.
  package var hasWriteInFlight: Bool { journal?.hasFlight ?? false }

  /// True once the record with `seq`, and every record before it, is in the file (always without a
  /// journal). Only for records made in this process.
  package func isWritten(_ seq: UInt64) -> Bool { journal.map { seq <= $0.writtenThrough } ?? true }

  /// How many writes have failed and taken saves back: a caller that leased items before a failure
  /// checks it, since some of those items may be gone.
  package private(set) var writeFailures = 0

  /// Waits for the write started by `beginCommit` and hands over its outcome once: nil when there
  /// was none, `.some(nil)` when it succeeded, else `.some(failure)`: its saves, and those made
  /// since, were taken back (`isRefused`).
  package func takeWritten() -> FileError?? {
    _ = settleWrite()
    defer { written = nil }
    return written
  }

  /// Lands the write in flight, if any: on failure its saves and those made since are taken back.
  /// Returns what landed now (as `takeWritten`), and keeps it for `takeWritten`.
  @discardableResult
  package func settleWrite() -> FileError?? {
    guard let journal, let outcome = journal.takeLanded() else { return nil }
    written = outcome
    if case .some(let failure) = outcome {
      takeBack(writing + uncommitted, after: failure, removing: journal.lastCutFailed ? writing : [])
      uncommitted.removeAll(keepingCapacity: true)
    } else {
      lastCommitFailed = false
    }
    writing.removeAll(keepingCapacity: true)
    return outcome
  }

  /// True when the save with `seq` was taken back after a failed write: its reply is a refusal.
  package func isRefused(_ seq: UInt64) -> Bool { !refusedSaves.isEmpty && refusedSaves.contains(seq) }

  package var hasRefusedSaves: Bool { !refusedSaves.isEmpty }

  /// Every reply that could name a refused save has gone out.
  package func clearRefusedSaves() { if !refusedSaves.isEmpty { refusedSaves.removeAll() } }

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

  /// Hides the items until `ack`, `release` or expiry, durably. Returns the seq of its record
  /// (`isWritten` says when it is in the file).
  @discardableResult
  package func lease(_ lease: Lease) -> UInt64 {
    items.setLeased(lease.seqs, true)
    leases.append(lease)
    version &+= 1
    guard let journal else { return 0 }  // without a journal a lease takes no seq
    let seq = items.takeSeq()
    journal.append(.lease(lease), seq: seq)
    return seq
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
