import Dispatch
package import OutboxSupport

/// The append-only log the store writes every change to before its reply goes out.
///
/// Group commit: a burst's records collect in `buffer` and reach the file in one `write`; `--fsync`
/// decides when the file is flushed (before the replies, in one background pass a second that also
/// takes the segments closed since the last, or never by us). Segments are created on first use,
/// with `O_EXCL | O_NOFOLLOW`, and rotate at `segmentLimit` bytes; the open one is written out and
/// dropped from the page cache every `writeBackStep` bytes, a closed one as it closes. A failed
/// write is cut back off the file; after a failed fsync the segment is cut back to its last good
/// record and abandoned for a new one.
///
/// Writing off the loop's thread: `beginCommit` hands the buffer to the writer thread, which creates
/// the next segment first when none is open (after a rotation), writes the item records' checksums
/// and then the bytes (and flushes them with `always`), while the loop goes on gathering the next
/// burst's records into a second buffer. At most one write is in flight.
/// It lands (`land`) before anything else touches the file: a commit, a rotation, an fsync, a
/// compaction, close. The store takes its outcome (`takeLanded`): only then may the replies that
/// wait for it go out. A failed flight takes the records gathered since with it (their item records
/// are dropped; the store takes those saves back too).
package final class Journal {
  package let directory: String
  package let policy: FsyncPolicy
  /// Not larger: a snapshot rewrites each closed segment that lost items since the last one, and a
  /// backlog drained by `--deliver` from 64 MiB segments rewrote 8 times the bytes (125 MB against
  /// 16 MB for 200k items) for 20% more CPU, though a pass would fsync 16 times fewer segments.
  static let segmentLimit = 4 << 20
  /// Every this many bytes the open segment is written out and dropped from the page cache
  /// (`writeBackOpenSegment`): the cache holds little of the journal, the pages it frees are the
  /// next writes' (512 KiB was faster than 4 MiB, the segment, and than 256 KiB:
  /// Tests/bench/RESULTS.md), and the pass and the close have little left to write.
  static let writeBackStep = 512 << 10
  /// Where the open segment's last step ended, a multiple of `writeBackStep`: bytes before it are
  /// written out and dropped (or on their way, on the fsync queue).
  private var steppedTo = 0
  /// Where this journal rotates: `segmentLimit`, or less under `--max-store-bytes`.
  private let rotateAt: Int
  private var fd: Int32 = -1
  private var goodSize = 0
  private var buffer: [UInt8] = []
  /// The write in flight on `writer`, if any.
  private var flight: Flight? = nil
  /// What became of the last flight, until the store takes it: nil when nothing landed since, else
  /// its failure or nil.
  private var landed: FileError?? = nil
  /// The seq of the last record gathered, and the highest seq such that it and every record before
  /// it are in the file (of those made by this process).
  private var lastRecordSeq: UInt64 = 0
  private(set) var writtenThrough: UInt64 = 0
  /// The last landed flight's buffer, emptied, for the next one (its capacity kept).
  private var spare: [UInt8] = []
  /// Runs a write off the loop's thread: a queue of its own unless the store names a thread.
  package typealias Executor = (@escaping @Sendable () -> Void) -> Void
  var execute: Executor = { job in Journal.writer.async(execute: job) }
  private static let writer = DispatchQueue(label: "push-outbox.journal-writer")
  private var pendingItems = 0
  private var pendingOther = 0
  /// The seq of the first record in `buffer`: the name of a segment opened for it.
  private var pendingFirst: UInt64 = 0
  /// Every segment on disk, oldest first; the last one is being written when `fd` is open.
  package internal(set) var segments: [SegmentInfo] { didSet { cachedFileBytes = nil } }
  /// `fileBytes`, until `segments` changes (a capped store asks for it at every save).
  private var cachedFileBytes: Int64? = nil
  /// Monotonic time, for `everysec` (tests step their own).
  private let monotonic: MonotonicClock
  private var lastSync: Double
  private var unsynced = false
  private let syncQueue = DispatchQueue(label: "push-outbox.fsync")
  private let syncFailure = Mailbox<FileError>()
  /// True when the last failed commit could not cut its records back off the file.
  private(set) var lastCutFailed = false

  package init(
    directory: String, policy: FsyncPolicy, segments: [SegmentInfo], rotateAt: Int = segmentLimit,
    monotonic: MonotonicClock = .system
  ) {
    self.monotonic = monotonic
    lastSync = monotonic.seconds()
    self.rotateAt = rotateAt
    self.directory = directory
    self.policy = policy
    self.segments = segments
  }

  /// Records wait to be written, or are being written.
  var hasPendingRecords: Bool { !buffer.isEmpty || flight != nil }
  var totalBytes: Int64 { fileBytes + Int64(buffer.count + (flight.map { $0.bytes.count + $0.openingBytes } ?? 0)) }
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
        seq: seq, savedAt: savedAt, deliveries: 0, kind: kind, hasUser: hasUser, id: id, body: body, to: &out,
        checksum: false)  // written just before the write (`Flight.run`, `commit`)
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
    lastRecordSeq = seq
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
  /// Call only once a flight has landed (`takeLanded`).
  package func commit() throws(FileError) {
    land()
    guard !buffer.isEmpty else {
      writtenThrough = lastRecordSeq
      return
    }
    lastCutFailed = false
    do throws(FileError) {
      if fd < 0 { try openSegment(first: pendingFirst) }
      let path = path(segments[segments.count - 1].first)
      do throws(FileError) {
        try Self.write(&buffer, to: fd, path: path, flushes: policy == .always)
      } catch {
        abandonTail(after: error)
        throw error
      }
    } catch {
      keepOnlyBookkeeping()
      throw error
    }
    defer { discardPending() }
    writtenThrough = lastRecordSeq
    booked(bytes: buffer.count, items: pendingItems, other: pendingOther)
  }

  /// Records that reached the open segment: counted in it, and the segment rotated at `rotateAt`,
  /// else written out one step further when a step's bytes have come.
  private func booked(bytes: Int, items: Int, other: Int) {
    goodSize += bytes
    segments[segments.count - 1].bytes = goodSize
    segments[segments.count - 1].items += items
    segments[segments.count - 1].otherBytes += other
    unsynced = policy != .always
    if goodSize >= rotateAt {
      closeSegment()
    } else if goodSize - steppedTo >= Self.writeBackStep {
      writeBackOpenSegment()
    }
  }

  /// Drops the item records from `buffer`, keeping the others in order (after `before`'s).
  private func keepOnlyBookkeeping(after before: [UInt8] = []) {
    var kept: [UInt8] = []
    var first: UInt64? = nil
    for records in [before, buffer] {
      records.withUnsafeBytes { raw in
        SegmentFormat.forEachRecord(in: raw) { record, type in
          guard type != SegmentFormat.RecordType.item.rawValue else { return }
          first = first ?? raw.loadUnaligned(fromByteOffset: record.lowerBound + 9, as: UInt64.self)
          kept.append(contentsOf: raw[record])
        }
      }
    }
    buffer = kept
    pendingItems = 0
    pendingOther = kept.count
    pendingFirst = first ?? 0
  }

  // MARK: - Writing off the loop's thread

  /// Starts writing the records gathered so far on the writer thread and returns true. When no
  /// segment is open (after a rotation), the writer creates one for them first: a file's creation
  /// can take the loop's thread a quarter of a millisecond, and with `always` it is flushed with its
  /// directory. A failed creation is the write's failure, as `takeLanded` hands it over. False, with
  /// nothing started, when there are no records or a write is in flight.
  package func beginCommit() -> Bool {
    guard !buffer.isEmpty, flight == nil, landed == nil else { return false }
    let opens: UInt64? = fd < 0 ? pendingFirst : nil
    if let opens { retireEmptySegment(before: opens) }
    let flight = Flight(
      items: pendingItems, other: pendingOther, fd: fd, opens: opens,
      path: path(opens ?? segments[segments.count - 1].first), policy: policy, directory: directory)
    // Each buffer has one owner at a time, never a copy: the writer thread fills in the checksums in
    // place (a second reference would make it copy the whole write), and the landed buffer gathers
    // again with its memory (`land`).
    swap(&flight.bytes, &buffer)
    swap(&buffer, &spare)
    flight.lastSeq = lastRecordSeq
    pendingItems = 0
    pendingOther = 0
    self.flight = flight
    execute { flight.run() }
    return true
  }

  /// True while a write is in flight (not landed).
  var hasFlight: Bool { flight != nil }

  /// Where the records being gathered are (for tests: which buffer, not its bytes).
  var gatheringBase: UnsafeRawPointer? { buffer.withUnsafeBytes { $0.baseAddress } }

  /// True while a write is in flight, or its outcome waits for `takeLanded`.
  var isWriting: Bool { flight != nil || landed != nil }

  /// Lands the flight, if any, and hands over its outcome once: nil when none landed since the last
  /// call, else `.some(failure)`, `.some(nil)` on success.
  package func takeLanded() -> FileError?? {
    land()
    defer { landed = nil }
    return landed
  }

  /// Waits for the write in flight and books it (see `book`).
  private func land() {
    guard let flight else { return }
    flight.done.wait()
    self.flight = nil
    landed = .some(book(flight))
    swap(&spare, &flight.bytes)  // taken, not copied: emptying it keeps its memory
    spare.removeAll(keepingCapacity: true)
  }

  /// A landed flight: the segment it created taken on, its records counted in the segment, or on
  /// failure cut back off the file (none reached a file when the segment could not be created), its
  /// item records and those gathered since dropped, its other records kept ahead of the others.
  private func book(_ flight: Flight) -> FileError? {
    if let first = flight.opens, flight.fd >= 0 { adopt(flight.fd, first: first) }
    if let error = flight.error {
      lastCutFailed = false
      if fd >= 0 { abandonTail(after: error) }
      keepOnlyBookkeeping(after: flight.bytes)
      return error
    }
    writtenThrough = max(writtenThrough, flight.lastSeq)
    booked(bytes: flight.bytes.count, items: flight.items, other: flight.other)
    return nil
  }

  /// One write handed to the writer thread. The loop touches it again only after `done`.
  private final class Flight: @unchecked Sendable {
    var bytes: [UInt8]
    let items: Int
    let other: Int
    /// The open segment's descriptor; with `opens`, -1 until the writer created the segment.
    var fd: Int32
    /// The first seq of the segment the writer creates for this write, when none is open.
    let opens: UInt64?
    let path: String
    let policy: FsyncPolicy
    let directory: String
    var error: FileError? = nil
    /// The seq of its last record.
    var lastSeq: UInt64 = 0
    let done = DispatchSemaphore(value: 0)

    init(items: Int, other: Int, fd: Int32, opens: UInt64?, path: String, policy: FsyncPolicy, directory: String) {
      (self.bytes, self.items, self.other, self.fd, self.opens) = ([], items, other, fd, opens)
      (self.path, self.policy, self.directory) = (path, policy, directory)
    }

    /// The file bytes it adds besides its records: the header of the segment it creates.
    var openingBytes: Int { opens == nil ? 0 : SegmentFormat.headerSize }

    /// On the writer thread.
    func run() {
      defer { done.signal() }
      do throws(FileError) {
        if opens != nil { fd = try Journal.createSegment(path, policy: policy, directory: directory) }
        try Journal.write(&bytes, to: fd, path: path, flushes: policy == .always)
      } catch {
        self.error = error
      }
    }
  }

  /// Writes records gathered with their item checksums still to write: the checksums, the write,
  /// and with `flushes` (`--fsync always`) the flush. On the loop's thread or the writer's.
  private static func write(_ records: inout [UInt8], to fd: Int32, path: String, flushes: Bool) throws(FileError) {
    records.withUnsafeMutableBytes { SegmentFormat.fillItemChecksums($0) }
    try FileIO.writeAll(fd, records, path: path)
    if flushes {
      try DurationHistogram.journalFsync.time { () throws(FileError) in try FileIO.sync(fd, path: path) }
    }
  }

  /// Opens a new segment on this thread (a synchronous commit's).
  private func openSegment(first: UInt64) throws(FileError) {
    land()
    retireEmptySegment(before: first)
    adopt(try Self.createSegment(path(first), policy: policy, directory: directory), first: first)
  }

  /// An abandoned segment that never got a record takes no name: it is deleted before the segment
  /// starting at `first` is created (its size on disk is checked too: a segment is deleted on what
  /// the file holds, never on a counter alone).
  private func retireEmptySegment(before first: UInt64) {
    if let last = segments.last, last.first >= first, last.bytes <= SegmentFormat.headerSize,
      FileIO.size(path(last.first)) <= SegmentFormat.headerSize
    {
      unlink(path(last.first))
      segments.removeLast()
    }
  }

  /// Creates a segment file with its header (flushed with its directory under `always`) and returns
  /// its descriptor; on failure nothing of it is left. On the loop's thread or the writer's.
  private static func createSegment(_ path: String, policy: FsyncPolicy, directory: String) throws(FileError) -> Int32 {
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
    KillPoint.reach(.rotation)
    return newFD
  }

  /// Takes on a created segment as the open one.
  private func adopt(_ newFD: Int32, first: UInt64) {
    fd = newFD
    goodSize = SegmentFormat.headerSize
    steppedTo = 0
    segments.append(SegmentInfo(first: first, bytes: goodSize))
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
  /// With `everysec` the closed segment waits for the next background pass (`syncClosed`); its data
  /// is written back now (and its cache dropped once written), so the pass has little left to do.
  func closeSegment() {
    land()
    guard fd >= 0 else { return }
    let old = fd
    fd = -1
    let path = path(segments[segments.count - 1].first)
    switch policy {
    case .never:
      closeFD(old)
    case .everysec:
      closed.append((old, path))
      if dropsAtClose { leaveCache(old, path: path, writes: true, closing: false) }
      if closed.count >= Self.closedLimit { syncClosed() }
    case .always:
      closed.append((old, path))
      syncClosed()
    }
  }

  // MARK: - Background flushing

  /// The open segment's bytes from the last step to the last step boundary leave the page cache on
  /// the fsync queue, through a duplicate descriptor: under `everysec` written out first (a failure is
  /// reported by the next `tick`, as a closed segment's write-out is), under `always` already flushed
  /// by their writes. The next writes never touch those pages. Linux only (`FileIO.writesBack`);
  /// `never` leaves the cache to the kernel. The pass still flushes the open segment: a write-out is
  /// not a flush.
  private func writeBackOpenSegment() {
    let (start, end) = (steppedTo, goodSize - goodSize % Self.writeBackStep)
    steppedTo = end
    guard policy != .never, FileIO.writesBack, end > start else { return }
    let copy = dup(fd)
    guard copy >= 0 else { return }  // only a hint: the close writes the whole segment out
    leaveCache(
      copy, path: path(segments[segments.count - 1].first), from: start, to: end, writes: policy == .everysec,
      closing: true)
  }

  /// On the fsync queue: `fd`'s bytes from `start` to `end` (0: the file's end) are written out,
  /// unless their writes flushed them (`writes` false), and every whole page before `end` leaves the
  /// page cache (a large folio across an earlier step's end did not leave then). A failed write-out
  /// is reported by the next `tick`. `closing`: `fd` is closed after.
  private func leaveCache(_ fd: Int32, path: String, from start: Int = 0, to end: Int = 0, writes: Bool, closing: Bool)
  {
    let slot = syncFailure
    syncQueue.async {
      do throws(FileError) {
        if writes { try FileIO.writeBack(fd, offset: start, bytes: end == 0 ? 0 : end - start, path: path) }
        FileIO.dropCache(fd, bytes: end)
      } catch { slot.put(error) }
      if closing { closeFD(fd) }
    }
  }

  /// Closed segments waiting for the background pass (`everysec`), their descriptors still open.
  private var closed: [(fd: Int32, path: String)] = []
  /// True when a closed segment is written back and dropped from the cache as it closes (`everysec`
  /// where `FileIO.writesBack`); else the pass drops it after its flush.
  private var dropsAtClose: Bool { policy == .everysec && FileIO.writesBack }
  /// How many closed segments may wait for the next second before a pass starts at once (each holds
  /// a descriptor).
  static let closedLimit = 32

  /// For `everysec`: one background pass when a second has passed since the last one. Returns an
  /// earlier background failure once (the open segment is then abandoned).
  package func tick() -> FileError? {
    if let failure = syncFailure.take() {
      land()
      closeSegment()
      return failure
    }
    guard policy == .everysec, unsynced || !closed.isEmpty, monotonic.seconds() - lastSync >= 1 else { return nil }
    var open: (fd: Int32, path: String)? = nil
    if unsynced {
      unsynced = false
      let copy = fd >= 0 ? dup(fd) : -1
      if copy >= 0 { open = (copy, path(segments[segments.count - 1].first)) }
    }
    lastSync = monotonic.seconds()
    syncClosed(andOpen: open)
    return nil
  }

  /// Starts one background pass: the segments waiting in `closed` and the open one (`andOpen`, a
  /// duplicate descriptor) are flushed with the directory (the segments' names) by `flush`; the closed
  /// segments' cache is dropped (durable, and not read again while serving) and every descriptor
  /// closed. A failure is reported by the next `tick`.
  private func syncClosed(andOpen open: (fd: Int32, path: String)? = nil) {
    guard !closed.isEmpty || open != nil else { return }
    let (closedFiles, directory, slot, dropped) = (closed, directory, syncFailure, dropsAtClose)
    let files = closedFiles + (open.map { [$0] } ?? [])
    closed.removeAll()
    syncQueue.async {
      do throws(FileError) {
        try DurationHistogram.journalFsync.time { () throws(FileError) in try Journal.flush(files, directory) }
        if !dropped { for file in closedFiles { FileIO.dropCache(file.fd) } }
      } catch { slot.put(error) }
      for file in files { closeFD(file.fd) }
    }
  }

  /// From this many files in a pass, one `syncfs` flushes them all (`flush`).
  static let filesForSyncfs = 2
  /// Above this much dirty page cache in the system, a pass flushes each file instead of the
  /// filesystem: a `syncfs` would write out (and wait for) other programs' data too. The store's own
  /// share is small by then: its segments are written out every `writeBackStep` and as they close.
  static let syncfsDirtyLimit = 16 << 20

  /// True when a pass of `files` files is one `syncfs`, given the system's dirty bytes (nil: unknown;
  /// read only for a pass of several files).
  static func passUsesSyncfs(files: Int, dirtyBytes: @autoclosure () -> Int?) -> Bool {
    guard files >= filesForSyncfs, let dirtyBytes = dirtyBytes() else { return false }
    return dirtyBytes <= syncfsDirtyLimit
  }

  /// Makes `files` and `directory`'s entries durable. From `filesForSyncfs` files, one `syncfs` of
  /// their filesystem where it reports failures (Linux 5.8 or later), unless other programs hold
  /// much unwritten data (`syncfsDirtyLimit`): at full speed a pass takes dozens of closed 4 MiB
  /// segments, and a flush each would be an fsync and a flush of the disk's cache each. Else, or
  /// when the `syncfs` fails (the failure may be another file's on the same filesystem), each file
  /// is flushed and then the directory: a failure then names its file.
  static func flush(_ files: [(fd: Int32, path: String)], _ directory: String) throws(FileError) {
    // a failed syncfs is nil: each file's flush below says whether the failure was one of ours
    if passUsesSyncfs(files: files.count, dirtyBytes: FileIO.systemDirtyBytes()),
      (try? FileIO.syncFilesystem(files[0].fd, path: directory)) == true
    {
      return
    }
    for file in files { try FileIO.sync(file.fd, path: file.path) }
    try FileIO.syncDirectory(directory)
  }

  /// What a checkpoint needs to count only durable records: the queue that flushes closed segments
  /// (wait on it: their pass has started) and a duplicate of the open segment's descriptor to flush
  /// (-1 when none is open).
  func durabilityBarrier() -> (queue: DispatchQueue, openFD: Int32) {
    land()
    syncClosed()
    return (syncQueue, fd >= 0 ? dup(fd) : -1)
  }

  /// Milliseconds until `tick` has work, or -1.
  var msUntilSync: Int32 {
    guard policy == .everysec, (unsynced && fd >= 0) || !closed.isEmpty else { return -1 }
    return Int32(max(0, (lastSync + 1 - monotonic.seconds()) * 1000) + 1)
  }

  /// Flushes and closes (at shutdown); an open segment with no records is deleted.
  package func close() {
    land()
    if fd >= 0, goodSize == SegmentFormat.headerSize, FileIO.size(path(segments[segments.count - 1].first)) <= goodSize
    {
      let first = segments.removeLast().first
      closeFD(fd)
      fd = -1
      unlink(path(first))
    }
    closeSegment()
    syncClosed()
    syncQueue.sync {}
  }
}

// MARK: - Compaction

/// Bookkeeping for compaction: which segment holds a seq, and how much of each no longer counts.
extension Journal {
  /// The index of the segment that holds the item with `seq`.
  func segmentIndex(of seq: UInt64) -> Int? {
    var low = 0
    var high = segments.count
    while low < high {
      let mid = (low + high) / 2
      if segments[mid].first <= seq { low = mid + 1 } else { high = mid }
    }
    return low == 0 ? nil : low - 1
  }

  /// An item written to a segment is no longer held (`noteRemoved`), or its state changed: delivery
  /// count, dead or requeued (`noteChanged`); either makes the segment's next rewrite worth doing.
  func noteRemoved(_ seq: UInt64) { if let n = segmentIndex(of: seq) { segments[n].dead += 1 } }
  func noteChanged(_ seq: UInt64) { if let n = segmentIndex(of: seq) { segments[n].changed += 1 } }

  /// True when the open segment holds something a compaction should drop.
  var currentNeedsRewrite: Bool { isOpen && (segments.last?.needsRewrite ?? false) }

  /// Records the outcome of a rewrite: `info` replaces the segment (nil: it was deleted).
  func replace(first: UInt64, with info: SegmentInfo?, dead: Int, changed: Int) {
    land()
    guard let n = segments.firstIndex(where: { $0.first == first }), !isOpen || n != segments.count - 1 else { return }
    guard var updated = info else {
      segments.remove(at: n)
      return
    }
    updated.dead = max(0, segments[n].dead - dead)
    updated.changed = max(0, segments[n].changed - changed)
    segments[n] = updated
  }
}
