/// Who took a lease: a client's `flushPending`, or push-outbox's own delivery to Braze.
package enum LeaseOrigin: UInt8, Sendable {
  case flush = 0, delivery = 1
}

/// Items handed out with a lease, hidden until ack, release or expiry.
package struct Lease: Sendable, Equatable {
  package var flushId: String
  package var seqs: [UInt64]
  package var expiresAt: Int64
  /// Opaque bytes the caller keeps with the lease (a flush's shape), journaled with it.
  package var note: [UInt8]
  package var origin: LeaseOrigin

  package init(flushId: String, seqs: [UInt64], expiresAt: Int64, note: [UInt8], origin: LeaseOrigin = .flush) {
    self.flushId = flushId
    self.seqs = seqs
    self.expiresAt = expiresAt
    self.note = note
    self.origin = origin
  }
}
