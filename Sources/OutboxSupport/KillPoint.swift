import Synchronization

/// Named points in the store's file work where a crash test can kill the process:
/// `PUSH_OUTBOX_KILL_AT=<point>:<n>` sends SIGKILL to itself the n-th time (from 1) the point is
/// reached. Unset (always, outside tests), a point costs one load of a constant.
package enum KillPoint: String, CaseIterable, Sendable {
  /// A snapshot's journal records are flushed; its checkpoint is not written yet.
  case barrier
  /// A temporary file (checkpoint or segment rewrite) is written and flushed, not yet renamed.
  case temp
  /// A temporary file was renamed into place; the directory is not flushed yet.
  case renamed
  /// A new checkpoint is in place (file and directory flushed); no segment of its snapshot is
  /// rewritten or deleted yet.
  case checkpoint
  /// A segment rewrite was renamed into place and the directory flushed.
  case rewrite
  /// A segment was unlinked; the directory is not flushed yet.
  case deletion
  /// The directory was flushed after one or more unlinks.
  case deletionSynced
  /// A snapshot's work is done (its last directory flush included).
  case compacted
  /// A new segment file was created with its header (rotation or first write).
  case rotation
  /// `relay`: JetStream acked a round's publishes; the items are not yet removed from the store.
  case relayAcked

  private static let armed: (point: KillPoint, count: Int)? = parse(getenv("PUSH_OUTBOX_KILL_AT"))
  private static let reached = Atomic<Int>(0)

  /// Parses `<point>:<n>` (n ≥ 1); anything else disarms.
  static func parse(_ text: UnsafePointer<CChar>?) -> (point: KillPoint, count: Int)? {
    guard let text else { return nil }
    let parts = String(cString: text).split(separator: ":")
    guard parts.count == 2, let point = KillPoint(rawValue: String(parts[0])), let n = Int(parts[1]), n >= 1
    else { return nil }
    return (point, n)
  }

  /// Kills the process when this is the armed point's n-th visit.
  package static func reach(_ point: KillPoint) {
    guard let armed, armed.point == point else { return }
    if reached.add(1, ordering: .relaxed).newValue == armed.count { kill(getpid(), SIGKILL) }
  }
}
