#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One snapshot's disk work, planned on the request loop and carried out on a background queue:
/// make the checkpoint durable, then rewrite each segment that holds removed items, stale counts or
/// mostly bookkeeping (or delete it when nothing in it is held), oldest first.
///
/// The work is bounded by what changed: only segments touched since the last snapshot are rewritten,
/// and a segment is at most `Journal.segmentLimit` bytes of held items (a larger one only after an upgrade).
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

  var checkpoint: Checkpoint
  var rewrites: [Rewrite]

  /// Captures the work for the store as it is now. Closes the open segment first if it needs a rewrite.
  static func plan(store: Store, journal: Journal, now: Int64) -> Compaction {
    if journal.currentNeedsRewrite { journal.closeSegment() }
    let segments = journal.segments
    let closed = journal.isOpen ? segments.count - 1 : segments.count
    var rewrites: [Rewrite] = []
    var listed: [UInt64] = []
    for n in segments.indices {
      let info = segments[n]
      let held = info.items - info.dead
      guard n < closed, held <= 0 || info.needsRewrite else {
        if held > 0 { listed.append(info.first) }
        continue
      }
      let next = n + 1 < segments.count ? segments[n + 1].first : nil
      let content = held > 0 ? SegmentWriter.content(of: store.items, from: info.first, to: next) : nil
      let items = content?.items ?? 0
      if items > 0 { listed.append(info.first) }
      rewrites.append(
        Rewrite(
          first: info.first, bytes: items > 0 ? content?.bytes : nil, items: items, dead: info.dead,
          changed: info.changed))
    }
    let checkpoint = Checkpoint(
      createdAt: now, coversSeq: store.items.nextSeq - 1, nextSeq: store.items.nextSeq,
      firstSeq: store.items.firstSeq ?? store.items.nextSeq, items: store.count, segments: listed, leases: store.leases,
      finished: store.finished)
    return Compaction(checkpoint: checkpoint, rewrites: rewrites)
  }

  /// Does the work; the first failure stops it (what is done stays consistent: see `Recovery`).
  func run(directory: String, policy: FsyncPolicy) -> FileError? {
    do throws(FileError) {
      try FileIO.writeAtomically(checkpoint.encode(), to: directory + "/" + Checkpoint.fileName, directory: directory)
      for rewrite in rewrites {
        let path = directory + "/" + SegmentFormat.name(first: rewrite.first)
        if let bytes = rewrite.bytes {
          // Always flushed, whatever the policy: a rewrite replaces bytes that may already be durable.
          try FileIO.writeAtomically(bytes, to: path, directory: directory)
        } else if unlink(path) != 0 && errno != ENOENT {
          throw FileError(operation: "unlink", path: path, code: errno)
        }
      }
      if !rewrites.isEmpty { try FileIO.syncDirectory(directory) }
      return nil
    } catch {
      return error
    }
  }

  /// Tells the journal what the files look like now.
  func record(in journal: Journal) {
    for rewrite in rewrites {
      var info = SegmentInfo(first: rewrite.first)
      info.bytes = rewrite.bytes?.count ?? 0
      info.items = rewrite.items
      journal.replace(
        first: rewrite.first, with: rewrite.bytes == nil ? nil : info, dead: rewrite.dead, changed: rewrite.changed)
    }
  }
}
