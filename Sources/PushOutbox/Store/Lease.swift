/// Items handed out by `flushPending {leaseMs}` and hidden until `ackFlush`, `releaseFlush` or expiry.
package struct Lease: Sendable {
  package var flushId: String
  package var seqs: [UInt64]
  package var expiresAt: Int64
  /// The shape the first call asked for; a repeat returns exactly the same answer.
  package var shape: Shape
  /// Ids skipped for lack of an identifier when the lease was made.
  package var skipped: [String]
}

extension Service {
  /// Ends a lease whose time is up: its items are pending again, one delivery more.
  package func expireLease() {
    guard let lease, clock.now() >= lease.expiresAt else { return }
    store.setLeased(lease.seqs, false, countDelivery: true)
    self.lease = nil
    log.info("lease \(lease.flushId) expired; \(lease.seqs.count) items are pending again")
  }

  /// Removes exactly the leased items. A repeat after success acks 0; an unknown id is an error.
  package func ackLease(_ flushId: String) throws(StoreError) -> Int {
    expireLease()
    if let lease, lease.flushId == flushId {
      let acked = store.remove(seqs: lease.seqs)
      recordRemoval(lease.seqs)
      self.lease = nil
      rememberFinished(flushId)
      return acked
    }
    if finishedFlushIds.contains(flushId) { return 0 }
    throw .leaseNotFound(flushId)
  }

  /// Returns the leased items to pending before the lease ends.
  package func releaseLease(_ flushId: String) throws(StoreError) -> Int {
    expireLease()
    guard let lease, lease.flushId == flushId else { throw .leaseNotFound(flushId) }
    store.setLeased(lease.seqs, false, countDelivery: true)
    self.lease = nil
    return lease.seqs.count
  }

  /// Flush ids that were acked or drained recently, so a repeated ack is answered `acked: 0`.
  package func rememberFinished(_ flushId: String) {
    finishedFlushIds.append(flushId)
    if finishedFlushIds.count > 256 { finishedFlushIds.removeFirst(finishedFlushIds.count - 256) }
  }
}
