/// Durability of each journal write (see README "Durability").
package enum FsyncPolicy: String, Sendable, CaseIterable {
  case always, everysec, never
}

/// What the store knows about one segment file, for compaction.
package struct SegmentInfo: Sendable, Equatable {
  package var first: UInt64
  package var bytes = 0
  /// Item records in the file.
  package var items = 0
  /// Item records in the file whose items are no longer held.
  package var dead = 0
  /// Held items whose delivery count changed since the file was written.
  package var changed = 0
  /// Bytes of records other than items (removals, leases).
  var otherBytes = 0
  /// Recovery found damage here (a copy is in quarantine/); the next compaction rewrites it.
  var damaged = false

  package init(first: UInt64, bytes: Int = 0, items: Int = 0) {
    self.first = first
    self.bytes = bytes
    self.items = items
  }

  /// True when a rewrite would drop removed items, stale counts or mostly-dead bookkeeping.
  var needsRewrite: Bool { dead > 0 || changed > 0 || damaged || otherBytes * 2 > bytes }
}
