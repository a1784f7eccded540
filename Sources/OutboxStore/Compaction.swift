import Dispatch
import OutboxSupport

/// One snapshot's disk work, planned on the request loop and carried out on a background queue:
/// make the checkpoint durable, then rewrite each segment that holds removed items, stale counts or
/// mostly bookkeeping (or delete it when nothing in it is held), oldest first.
///
/// What a segment holds is counted from the item table, the store's truth, never from the journal's
/// per-segment counters: those only say which segments are worth rewriting. A segment is deleted
/// only when the table holds no row in its seq range. (Trusting the counters lost data: Swift 6.3.1
/// at -O dropped the store of `items` into a rewritten segment's counters, and the next snapshot
/// deleted a segment whose items were still held; see CHANGELOG.)
///
/// The work is bounded by what changed: only segments touched since the last snapshot are rewritten,
/// and a segment is at most `Journal.segmentLimit` bytes of held items (a larger one only after an upgrade).
/// Under `--max-store-bytes` a rewrite larger than the cap's headroom allows is not written: its
/// segment stays as it is until nothing in it is held and it is deleted (see `StoreCap`).
struct Compaction: Sendable {
  struct Rewrite: Sendable {
    var first: UInt64
    /// The new file's bytes; nil deletes the segment.
    var bytes: [UInt8]?
    var items: Int
    /// What the segment's counters said when it was captured (subtracted once the rewrite lands).
    var dead: Int
    var changed: Int
  }

  /// A plan that would break the snapshot invariant: it is abandoned and logged, never written.
  struct Refusal: Error, CustomStringConvertible {
    var description: String
  }

  var checkpoint: Checkpoint
  var rewrites: [Rewrite]
  /// Listed segments that are kept as they are: each must still exist when the checkpoint is written.
  var kept: [UInt64]
  /// The checkpoint counts only durable records: the journal's background flushes are waited for and
  /// the open segment (a duplicate descriptor, closed by `run`) is flushed before it is written.
  var syncs: DispatchQueue? = nil
  var openFD: Int32 = -1

  /// Captures the work for the store as it is now. Closes the open segment first if it needs a rewrite.
  /// Call only when the journal has no records waiting for a commit.
  static func plan(store: Store, journal: Journal, now: Int64) throws(Refusal) -> Compaction {
    guard !journal.hasPendingRecords else { throw Refusal(description: "journal records await a commit") }
    if journal.currentNeedsRewrite { journal.closeSegment() }
    let segments = journal.segments
    let closed = journal.isOpen ? segments.count - 1 : segments.count
    let table = store.items.table
    var work = Compaction(checkpoint: checkpoint(store: store, now: now), rewrites: [], kept: [])
    var (listed, counts): ([UInt64], [Int]) = ([], [])
    for n in segments.indices {
      let info = segments[n]
      let next = n + 1 < segments.count ? segments[n + 1].first : nil
      let held = table.heldCount(in: table.lowerBound(info.first)..<(next.map(table.lowerBound) ?? table.seqs.count))
      if n < closed && (held == 0 || info.needsRewrite || held != info.items - info.dead),
        case let rewrite = try rewrite(info, held: held, next: next, store: store),
        (rewrite.bytes?.count ?? 0) <= (store.cap?.rewriteLimit ?? Int.max)
      {
        work.rewrites.append(rewrite)
      } else if held > 0 {  // kept as it is (a rewrite too large for the cap's headroom waits)
        work.kept.append(info.first)
      }
      if held > 0 {
        listed.append(info.first)
        counts.append(held)
      }
    }
    work.checkpoint.segments = listed
    work.checkpoint.held = counts
    try work.check(store: store, firstSegment: segments.first?.first)
    (work.syncs, work.openFD) = journal.durabilityBarrier()
    return work
  }

  private static func checkpoint(store: Store, now: Int64) -> Checkpoint {
    var checkpoint = Checkpoint(
      createdAt: now, coversSeq: store.items.nextSeq - 1, nextSeq: store.items.nextSeq,
      firstSeq: store.items.firstSeq ?? store.items.nextSeq, items: store.count, segments: [], leases: store.leases,
      finished: store.finished)
    checkpoint.idKey = store.items.idKey
    return checkpoint
  }

  private static func rewrite(_ info: SegmentInfo, held: Int, next: UInt64?, store: Store) throws(Refusal) -> Rewrite {
    guard held > 0 else {
      return Rewrite(first: info.first, bytes: nil, items: 0, dead: info.dead, changed: info.changed)
    }
    let content = SegmentWriter.content(of: store.items, from: info.first, to: next)
    guard content.items == held else {
      throw Refusal(description: "segment \(info.first): \(held) rows held but \(content.items) records written")
    }
    return Rewrite(first: info.first, bytes: content.bytes, items: held, dead: info.dead, changed: info.changed)
  }

  /// The snapshot invariant, checked before anything is written: every held row (pending, leased or
  /// dead letter) lies in a segment the checkpoint lists, and the listed counts add up to the rows held.
  private func check(store: Store, firstSegment: UInt64?) throws(Refusal) {
    let table = store.items.table
    let before = table.heldCount(in: table.rows.lowerBound..<(firstSegment.map(table.lowerBound) ?? table.seqs.count))
    guard before == 0 else {
      throw Refusal(description: "\(before) held rows lie before the oldest segment (\(firstSegment ?? 0))")
    }
    let listed = checkpoint.held?.reduce(0, +) ?? 0
    guard listed == table.liveCount, checkpoint.items == table.liveCount - store.items.deadCount else {
      throw Refusal(description: "segments list \(listed) rows but \(table.liveCount) are held")
    }
  }

  /// Does the work; the first failure stops it (what is done stays consistent: see `Recovery`).
  ///
  /// The order, each step durable before the next: the journal's records (closed segments and the
  /// open one) are flushed; the checkpoint is written to a temporary file, flushed, renamed into
  /// place, and the directory flushed; then, oldest first, each rewrite goes the same way (temporary
  /// file, flush, rename, directory flush) and each deletion is an unlink whose directory flush comes
  /// before the next rename and at the end. A segment the new checkpoint no longer lists is only
  /// unlinked once that checkpoint is durable.
  func run(directory: String, policy: FsyncPolicy) -> FileError? {
    defer { closeFD(openFD) }
    do throws(FileError) {
      syncs?.sync {}
      if openFD >= 0 { try FileIO.sync(openFD, path: "the open segment") }
      for first in kept where access(directory + "/" + SegmentFormat.name(first: first), F_OK) != 0 {
        throw FileError(
          operation: "snapshot check (a listed segment is gone)", path: SegmentFormat.name(first: first), code: errno)
      }
      KillPoint.reach(.barrier)
      try FileIO.writeAtomically(checkpoint.encode(), to: directory + "/" + Checkpoint.fileName, directory: directory)
      KillPoint.reach(.checkpoint)
      var unlinked = false
      for rewrite in rewrites {
        let path = directory + "/" + SegmentFormat.name(first: rewrite.first)
        if let bytes = rewrite.bytes {
          if unlinked { try syncDeletions(directory, &unlinked) }
          // Always flushed, whatever the policy: a rewrite replaces bytes that may already be durable.
          try FileIO.writeAtomically(bytes, to: path, directory: directory)
          KillPoint.reach(.rewrite)
        } else if unlink(path) != 0 && errno != ENOENT {
          throw FileError(operation: "unlink", path: path, code: errno)
        } else {
          unlinked = true
          KillPoint.reach(.deletion)
        }
      }
      if unlinked { try syncDeletions(directory, &unlinked) }
      KillPoint.reach(.compacted)
      return nil
    } catch {
      return error
    }
  }

  /// Flushes the directory after unlinks, so no later rename is durable before them.
  private func syncDeletions(_ directory: String, _ unlinked: inout Bool) throws(FileError) {
    try FileIO.syncDirectory(directory)
    unlinked = false
    KillPoint.reach(.deletionSynced)
  }

  /// Tells the journal what the files look like now.
  func record(in journal: Journal) {
    for rewrite in rewrites {
      let info = rewrite.bytes.map { SegmentInfo(first: rewrite.first, bytes: $0.count, items: rewrite.items) }
      journal.replace(first: rewrite.first, with: info, dead: rewrite.dead, changed: rewrite.changed)
    }
  }
}
