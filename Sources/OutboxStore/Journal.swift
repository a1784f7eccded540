import Dispatch
package import OutboxSupport

/// The append-only log the store writes every change to before its reply goes out.
///
/// Group commit: a burst's records collect in `buffer` and reach the file in one `write`; `--fsync`
/// decides when the file is flushed (before the replies, about once a second in the background, or
/// never by us). Segments are created on first use, with `O_EXCL | O_NOFOLLOW`, and rotate at
/// `segmentLimit` bytes. A failed write is cut back off the file; after a failed fsync the segment is
/// cut back to its last good record and abandoned for a new one.
package final class Journal {
  package let directory: String
  package let policy: FsyncPolicy
  static let segmentLimit = 4 << 20
  /// Where this journal rotates: `segmentLimit`, or less under `--max-store-bytes`.
  let rotateAt: Int
  private var fd: Int32 = -1
  private var goodSize = 0
  private var buffer: [UInt8] = []
  private var pendingItems = 0
  private var pendingOther = 0
  /// The seq of the first record in `buffer`: the name of a segment opened for it.
  private var pendingFirst: UInt64 = 0
  /// Every segment on disk, oldest first; the last one is being written when `fd` is open.
  package internal(set) var segments: [SegmentInfo] { didSet { cachedFileBytes = nil } }
  /// `fileBytes`, until `segments` changes (a capped store asks for it at every save).
  private var cachedFileBytes: Int64? = nil
  private var lastSync = Clock.monotonicSeconds()
  private var unsynced = false
  private let syncQueue = DispatchQueue(label: "push-outbox.fsync")
  private let syncFailure = Mailbox<FileError>()
  /// True when the last failed commit could not cut its records back off the file.
  private(set) var lastCutFailed = false

  package init(directory: String, policy: FsyncPolicy, segments: [SegmentInfo], rotateAt: Int = segmentLimit) {
    self.rotateAt = rotateAt
    self.directory = directory
    self.policy = policy
    self.segments = segments
  }

  var hasPendingRecords: Bool { !buffer.isEmpty }
  var totalBytes: Int64 { fileBytes + Int64(buffer.count) }
  /// The segments' bytes as written (without the records waiting for a commit).
  var fileBytes: Int64 {
    if let cachedFileBytes { return cachedFileBytes }
    let total = Int64(segments.reduce(0) { $0 + $1.bytes })
    cachedFileBytes = total
    return total
  }
  /// True while a segment is open for writing (it is the last of `segments`).
  package var isOpen: Bool { fd >= 0 }

  private func path(_ first: UInt64) -> String { directory + "/" + SegmentFormat.name(first: first) }

  // MARK: - Recording

  /// A record other than a saved item, as `append(_:seq:)` writes it.
  enum Change {
    case remove([UInt64])
    case lease(Lease)
    case leaseEnd(flushId: String, outcome: LeaseOutcome, counts: [(UInt64, UInt32)])
    case deadLetter([(UInt64, String)])
    case requeue([UInt64])
  }

  /// Records a saved item (the hot path: written in place, in one pass).
  func appendItem(
    seq: UInt64, savedAt: Int64, kind: ItemKind, hasUser: Bool, id: ItemID, body: UnsafeRawBufferPointer
  ) {
    recording(seq, item: true) { out in
      SegmentFormat.appendItem(
        seq: seq, savedAt: savedAt, deliveries: 0, kind: kind, hasUser: hasUser, id: id, body: body, to: &out)
    }
  }

  /// Records a change to held items, with its own `seq`.
  func append(_ change: Change, seq: UInt64) {
    recording(seq, item: false) { out in
      switch change {
      case .remove(let seqs): SegmentFormat.appendRemove(seqs, recordSeq: seq, to: &out)
      case .lease(let lease): SegmentFormat.appendLease(lease, recordSeq: seq, to: &out)
      case .leaseEnd(let flushId, let outcome, let counts):
        SegmentFormat.appendLeaseEnd(flushId: flushId, outcome: outcome, counts: counts, recordSeq: seq, to: &out)
      case .deadLetter(let entries): SegmentFormat.appendDeadLetter(entries, recordSeq: seq, to: &out)
      case .requeue(let seqs): SegmentFormat.appendRequeue(seqs, recordSeq: seq, to: &out)
      }
    }
  }

  /// The one append path: the burst's first record names a segment opened for it, and the records
  /// are counted (items, and the bytes of the others) for the segment's bookkeeping.
  @inline(__always)
  private func recording(_ seq: UInt64, item: Bool, _ write: (inout [UInt8]) -> Void) {
    if buffer.isEmpty { pendingFirst = seq }
    let start = buffer.count
    write(&buffer)
    if item { pendingItems += 1 } else { pendingOther += buffer.count - start }
  }

  /// Forgets the burst's records without writing them.
  func discardPending() {
    buffer.removeAll(keepingCapacity: true)
    pendingItems = 0
    pendingOther = 0
  }

  // MARK: - Committing

  /// Writes the burst's records (opening a segment for them if none is open); with `always`, also
  /// flushes them. On failure nothing of the burst stays in the file: its item records are dropped
  /// (those saves are refused) and its other records (removals, leases) are kept for the next commit,
  /// since memory already reflects them.
  package func commit() throws(FileError) {
    guard !buffer.isEmpty else { return }
    lastCutFailed = false
    do throws(FileError) {
      if fd < 0 { try openSegment(first: pendingFirst) }
      let path = path(segments[segments.count - 1].first)
      do throws(FileError) {
        try FileIO.writeAll(fd, buffer, path: path)
        if policy == .always {
          try DurationHistogram.journalFsync.time { () throws(FileError) in try FileIO.sync(fd, path: path) }
        }
      } catch {
        abandonTail(after: error)
        throw error
      }
    } catch {
      keepOnlyBookkeeping()
      throw error
    }
    defer { discardPending() }
    goodSize += buffer.count
    segments[segments.count - 1].bytes = goodSize
    segments[segments.count - 1].items += pendingItems
    segments[segments.count - 1].otherBytes += pendingOther
    unsynced = policy != .always
    if goodSize >= rotateAt { closeSegment() }
  }

  /// Drops the item records from `buffer`, keeping the others in order.
  private func keepOnlyBookkeeping() {
    var kept: [UInt8] = []
    var first: UInt64? = nil
    buffer.withUnsafeBytes { raw in
      let reader = SegmentReader(raw)
      var offset = 0
      while case .record(let record) = reader.read(at: offset) {
        if record.type != .item {
          first = first ?? record.seq
          kept.append(contentsOf: raw[offset..<record.end])
        }
        offset = record.end
      }
    }
    buffer = kept
    pendingItems = 0
    pendingOther = kept.count
    pendingFirst = first ?? 0
  }

  private func openSegment(first: UInt64) throws(FileError) {
    // An abandoned segment that never got a record takes no name (its size on disk is checked too:
    // a segment is deleted on what the file holds, never on a counter alone).
    if let last = segments.last, last.first >= first, last.bytes <= SegmentFormat.headerSize,
      FileIO.size(path(last.first)) <= SegmentFormat.headerSize
    {
      unlink(path(last.first))
      segments.removeLast()
    }
    let path = path(first)
    let newFD = try FileIO.createExclusive(path)
    do throws(FileError) {
      try FileIO.writeAll(newFD, SegmentFormat.header, path: path)
      if policy == .always {
        try FileIO.sync(newFD, path: path)
        try FileIO.syncDirectory(directory)
      }
    } catch {
      closeFD(newFD)
      unlink(path)
      throw error
    }
    fd = newFD
    goodSize = SegmentFormat.headerSize
    segments.append(SegmentInfo(first: first, bytes: goodSize))
    KillPoint.reach(.rotation)
    if policy == .everysec { unsynced = true }
  }

  /// Cuts a failed write off the file. After a failed fsync the pages are in an unknown state, so the
  /// file is also cut back and abandoned: the next commit opens a new segment.
  private func abandonTail(after error: FileError) {
    let cut = ftruncate(fd, off_t(goodSize)) == 0
    lastCutFailed = !cut
    if error.operation == "fsync" || !cut {
      if policy != .never { _ = fsync(fd) }
      closeSegment()
    }
  }

  /// Stops writing the current segment (it stays on disk, closed); the next commit opens a new one.
  func closeSegment() {
    guard fd >= 0 else { return }
    let old = fd
    fd = -1
    if policy == .never {
      closeFD(old)
      return
    }
    let (path, directory, slot) = (path(segments[segments.count - 1].first), directory, syncFailure)
    syncQueue.async {
      do throws(FileError) {
        try DurationHistogram.journalFsync.time { () throws(FileError) in
          try FileIO.sync(old, path: path)
          try FileIO.syncDirectory(directory)
        }
        FileIO.dropCache(old)  // durable, and not read again while serving
      } catch { slot.put(error) }
      closeFD(old)
    }
  }

  // MARK: - Background flushing

  /// For `everysec`: starts a background fsync when a second has passed since the last one.
  /// Returns an earlier background failure once (the segment was abandoned).
  package func tick() -> FileError? {
    if let failure = syncFailure.take() {
      closeSegment()
      return failure
    }
    guard policy == .everysec, unsynced, fd >= 0, Clock.monotonicSeconds() - lastSync >= 1 else { return nil }
    unsynced = false
    lastSync = Clock.monotonicSeconds()
    let copy = dup(fd)
    guard copy >= 0 else { return nil }
    let (path, directory, slot) = (path(segments[segments.count - 1].first), directory, syncFailure)
    syncQueue.async {
      do throws(FileError) {
        try DurationHistogram.journalFsync.time { () throws(FileError) in
          try FileIO.sync(copy, path: path)
          try FileIO.syncDirectory(directory)
        }
      } catch { slot.put(error) }
      closeFD(copy)
    }
    return nil
  }

  /// What a checkpoint needs to count only durable records: the queue that flushes closed segments
  /// (wait on it) and a duplicate of the open segment's descriptor to flush (-1 when none is open).
  func durabilityBarrier() -> (queue: DispatchQueue, openFD: Int32) {
    (syncQueue, fd >= 0 ? dup(fd) : -1)
  }

  /// Milliseconds until `tick` has work, or -1.
  var msUntilSync: Int32 {
    guard policy == .everysec, unsynced, fd >= 0 else { return -1 }
    return Int32(max(0, (lastSync + 1 - Clock.monotonicSeconds()) * 1000) + 1)
  }

  /// Flushes and closes (at shutdown); an open segment with no records is deleted.
  package func close() {
    if fd >= 0, goodSize == SegmentFormat.headerSize, FileIO.size(path(segments[segments.count - 1].first)) <= goodSize
    {
      let first = segments.removeLast().first
      closeFD(fd)
      fd = -1
      unlink(path(first))
    }
    closeSegment()
    syncQueue.sync {}
  }
}
