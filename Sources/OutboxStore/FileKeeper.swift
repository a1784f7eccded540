import Dispatch
package import OutboxJSON
package import OutboxSupport

/// Where and how the store keeps its files.
package struct FileOptions: Sendable {
  package var directory: String
  package var fsync: FsyncPolicy
  /// Seconds between snapshots (checkpoint plus compaction) while the store is dirty.
  package var snapshotInterval: Double
  /// Start even when recovery finds data missing, reporting it as `recoveredWithLoss`.
  package var acceptLoss: Bool
  /// A clean exit writes `load.image` (`LoadImage`) when the held items come to at least this many
  /// bytes, so the next start reads them at once instead of replaying the segments; nil: never.
  package var loadImageMinBytes: Int?
  /// Below it, a replay takes about as long as writing and reading an image would.
  package static let defaultLoadImageMinBytes = 256 << 20

  package init(
    directory: String, fsync: FsyncPolicy, snapshotInterval: Double, acceptLoss: Bool = false,
    loadImageMinBytes: Int? = defaultLoadImageMinBytes
  ) {
    self.directory = directory
    self.fsync = fsync
    self.snapshotInterval = snapshotInterval
    self.acceptLoss = acceptLoss
    self.loadImageMinBytes = loadImageMinBytes
  }
}

/// What `status` reports about the files.
package struct FileStatus: Sendable {
  package var lastSnapshotAt: Int64?
  package var snapshotSeq: UInt64 = 0
  package var journalBytes: Int64 = 0
  package var segments = 0
  package var recovery: [JSONValue] = []
  package init() {}
}

/// Keeps the store's files: the lock, recovery at start, and a snapshot every interval while the
/// store is dirty (checkpoint plus compaction, on a background queue, so requests keep being
/// answered) plus a final one at exit.
package final class FileKeeper {
  package let directory: String
  private let lock: StoreLock
  private let journal: Journal
  private let interval: Double
  private let loadImageMinBytes: Int?
  /// `store.id`, which a load image records (nil: none is written).
  private let identity: [UInt8]?
  private var savedVersion: UInt64
  private var nextDue: Double
  private let queue = DispatchQueue(label: "push-outbox.snapshot")
  private let finished = Mailbox<FileError?>()
  private var inFlight: Compaction? = nil
  private var inFlightVersion: UInt64 = 0
  package private(set) var status = FileStatus()
  /// The journal's last background fsync failed, and no snapshot has been taken since.
  package private(set) var fsyncFailed = false
  package private(set) var lastFsyncError: String?
  private let log: Log
  // Strong references: the store outlives its disk and holds none back. A weak reference would give
  // the store a side table, and every retain and release of it on the request path the slow path.
  private var measuredStore: Store?
  #if DEBUG
  private var auditedStore: Store?
  #endif

  /// Locks the directory, recovers it into `store`, and attaches the journal.
  package init(_ options: FileOptions, store: Store, log: Log) throws(StartupError) {
    directory = options.directory
    interval = options.snapshotInterval
    loadImageMinBytes = options.loadImageMinBytes
    nextDue = Clock.monotonicSeconds() + interval
    self.log = log
    #if DEBUG
    auditedStore = store
    #endif
    try StoreDirectory.prepare(directory)
    lock = try StoreLock(directory: directory)
    let outcome = try Recovery.run(directory: directory, store: store, acceptLoss: options.acceptLoss, log: log)
    if let image = outcome.discardedImage { queue.async { unlink(image) } }
    identity = outcome.identity ?? StoreIdentity.create(directory: directory, log: log)
    journal = Journal(
      directory: directory, policy: options.fsync, segments: outcome.segments,
      rotateAt: store.cap?.segmentLimit ?? Journal.segmentLimit)
    store.restore(leases: outcome.leases, finished: outcome.finished, journal: journal)
    status.recovery = outcome.warnings
    status.lastSnapshotAt = outcome.checkpoint?.createdAt
    status.snapshotSeq = outcome.checkpoint?.coversSeq ?? 0
    savedVersion = outcome.dirty ? store.version &- 1 : store.version
    if outcome.dirty { nextDue = 0 }
    measure(store)
    refresh()
    log.info("opened \(directory): \(store.count) items held in \(outcome.segments.count) segments")
  }

  /// How long the loop may sleep before there is work (-1: none).
  package func pollTimeoutMs(_ store: Store) -> Int32 {
    let sync = journal.msUntilSync
    if inFlight != nil { return Int32(max(10, interval * 250)) }  // come back to collect the result
    guard store.version != savedVersion else { return sync }
    let wait = Int32(min(max(0, nextDue - Clock.monotonicSeconds()) * 1000 + 1, 60_000))
    return sync < 0 ? wait : min(wait, sync)
  }

  /// Background fsyncs, collecting a finished snapshot, and starting a new one when due and dirty.
  package func tick(_ store: Store, now: Int64) {
    if let failure = journal.tick() {
      log.error("journal fsync failed (\(failure)); moved to a new segment, snapshotting now")
      fsyncFailed = true
      lastFsyncError = "\(failure)"
      savedVersion = store.version &- 1
      nextDue = 0
    }
    collect()
    guard inFlight == nil, store.version != savedVersion, Clock.monotonicSeconds() >= nextDue else { return }
    store.settleWrite()  // a snapshot counts only written records
    guard !journal.hasPendingRecords else { return }
    nextDue = Clock.monotonicSeconds() + interval
    guard let work = plan(store, now: now) else { return }
    let (directory, policy, slot) = (directory, journal.policy, finished)
    inFlight = work
    inFlightVersion = store.version
    queue.async { slot.put(DurationHistogram.snapshot.time { work.run(directory: directory, policy: policy) }) }
  }

  /// The snapshot's work, or nil when it would break the invariant (logged; nothing is written).
  private func plan(_ store: Store, now: Int64) -> Compaction? {
    do {
      return try Compaction.plan(store: store, journal: journal, now: now)
    } catch {
      log.error("snapshot abandoned, nothing written: \(error)")
      return nil
    }
  }

  /// Waits for a background snapshot, closes the journal, and takes a final snapshot if anything changed.
  package func finish(_ store: Store, now: Int64) {
    queue.sync {}  // a snapshot in flight, or the unlink of the image this start loaded
    collect()
    journal.close()
    if store.version != savedVersion || journal.segments.contains(where: \.needsRewrite),
      let work = plan(store, now: now)
    {
      inFlight = work
      inFlightVersion = store.version
      finished.put(DurationHistogram.snapshot.time { work.run(directory: directory, policy: journal.policy) })
      collect()
    }
    writeLoadImage(store)
  }

  /// `load.image` for the next start, when the store is large and its last checkpoint describes it as
  /// it is (the final snapshot succeeded), and the image fits under `--max-store-bytes`.
  private func writeLoadImage(_ store: Store) {
    guard let minimum = loadImageMinBytes, let identity, store.version == savedVersion, inFlight == nil else {
      return
    }
    let size = LoadImage.estimatedBytes(store.items)
    guard size >= minimum else { return }
    if let cap = store.cap, size > cap.max - StoreCap.measure(directory) {
      log.info("no \(LoadImage.fileName): it would pass --max-store-bytes")
      return
    }
    do {
      guard let checkpoint = try FileIO.read(directory + "/" + Checkpoint.fileName) else { return }
      try LoadImage.write(
        store.items, segments: journal.segments, checkpoint: checkpoint, identity: identity, directory: directory)
      log.info("wrote \(LoadImage.fileName): \(store.items.table.liveCount) rows")
    } catch {
      log.warn("no \(LoadImage.fileName): \(error)")
    }
  }

  /// Takes a snapshot now, if anything changed since the last one, and waits for it (the `shutdown`
  /// request). The journal stays open.
  package func snapshotNow(_ store: Store, now: Int64) {
    settle()
    nextDue = 0
    tick(store, now: now)
    settle()
  }

  /// Waits for a snapshot in flight and records its outcome (for tests and shutdown).
  package func settle() {
    queue.sync {}
    collect()
  }

  private func collect() {
    guard let work = inFlight, let outcome = finished.take() else { return }
    inFlight = nil
    if let error = outcome {
      log.error("snapshot failed: \(error)")  // still dirty: retried next interval
      return
    }
    work.record(in: journal)
    fsyncFailed = false
    audit(work)
    savedVersion = inFlightVersion
    if let store = measuredStore { measure(store) }
    status.lastSnapshotAt = work.checkpoint.createdAt
    status.snapshotSeq = work.checkpoint.coversSeq
    refresh()
  }

  /// Debug builds read the files back after each snapshot of a store up to 64 MiB and stop on a
  /// broken invariant (tests and fuzz targets call `SnapshotAudit` directly, at any size).
  private func audit(_ work: Compaction) {
    #if DEBUG
    guard let store = auditedStore, journal.totalBytes <= 64 << 20 else { return }
    let problems = SnapshotAudit.check(directory: directory, store: store.items)
    precondition(problems.isEmpty, "snapshot invariant broken: \(problems)")
    #endif
  }

  /// Measures the files besides the segments (checkpoint, quarantine, LOCK) for `Store.storeBytes`
  /// and the cap: at start and after each snapshot, when no temporary file is being written.
  private func measure(_ store: Store) {
    measuredStore = store
    store.filesBesideJournal = max(0, StoreCap.measure(directory) - Int(journal.fileBytes))
    store.checkpointBytes = FileIO.size(directory + "/" + Checkpoint.fileName)
  }

  /// Brings the journal figures in `status` up to date.
  package func refresh() {
    status.journalBytes = journal.totalBytes
    status.segments = journal.segments.count
  }
}
