import Dispatch

/// A failure before serving: a message for stderr, the process exit code, and for store-level
/// refusals the JSON-RPC error also written to stdout (with `id: null`) so a client can show it.
package struct StartupError: Error, Sendable {
  package var message: String
  package var exitCode: Int32
  package var rpcError: RPCError? = nil
}

/// Keeps the store's files: the lock, recovery at start, the journal, and a snapshot every interval
/// while the store is dirty (written on a background queue, so requests keep being answered) plus a
/// final one at exit. After a snapshot is durable, journal segments the previous snapshot covers are deleted.
package final class Persistence {
  package let directory: String
  private let lock: StoreLock
  package let journal: Journal
  private let interval: Double
  private var savedVersion: UInt64 = 0
  private var nextDue: Double
  private let queue = DispatchQueue(label: "push-outbox.snapshot")
  private let finished = Mailbox<SnapshotOutcome>()
  private var inFlight: SnapshotState? = nil
  private var inFlightVersion: UInt64 = 0
  /// `coversSeq` of the newest durable snapshot; segments from before the one it needs may go.
  private var latestCovers: UInt64

  /// Locks the store directory, recovers it into `service`, and opens a new journal segment.
  package init(directory: String, service: Service) throws(StartupError) {
    self.directory = directory
    self.interval = service.config.snapshotInterval
    self.nextDue = Clock.monotonicSeconds() + interval
    do { try FileIO.makeDirectories(directory) } catch {
      throw StartupError(message: "cannot create the store: \(error)", exitCode: 1)
    }
    lock = try StoreLock(directory: directory)
    Persistence.removeLeftoverTempFiles(directory)
    let outcome = try Recovery.run(directory: directory, service: service)
    latestCovers = outcome.snapshotCovers
    service.persistence.recovery = outcome.warnings
    do {
      journal = try Journal(
        directory: directory, policy: service.config.fsync, existing: outcome.segments, first: outcome.nextSeq)
    } catch {
      throw StartupError(message: "cannot open the journal: \(error)", exitCode: 1)
    }
    journal.deleteSegments(before: Persistence.oldestNeeded(journal.segments, covers: outcome.previousCovers))
    service.journal = journal
    if !outcome.setAside.isEmpty { secureRecoveredState(service, setAside: outcome.setAside) }
    savedVersion = outcome.warnings.isEmpty && outcome.segments.values.allSatisfy({ $0 <= 16 }) ? service.store.version : 0
    service.log.info("opened \(directory): \(service.store.count) items held")
  }

  /// After a recovery with loss: snapshot what was recovered, then move the damaged segments (and the
  /// unapplied ones after them) into `quarantine/`, so they can neither stop a later replay nor hide
  /// records written from now on. If the snapshot cannot be written they stay where they are.
  private func secureRecoveredState(_ service: Service, setAside names: [String]) {
    let outcome = Persistence.write(
      capture(service), createdAt: service.clock.now(), path: directory + "/" + SnapshotFile.fileName,
      directory: directory)
    guard record(outcome, service) else { return }
    savedVersion = service.store.version
    let quarantine = directory + "/quarantine"
    try? FileIO.makeDirectories(quarantine)
    for name in names {
      if rename(directory + "/" + name, quarantine + "/" + name + ".set-aside." + String(Clock.system.now())) == 0 {
        journal.forget(segment: JournalFormat.segmentFirst(name) ?? 0)
      }
    }
    try? FileIO.syncDirectory(directory)
  }

  private static func removeLeftoverTempFiles(_ directory: String) {
    for name in (try? FileIO.list(directory)) ?? [] where name.contains(".tmp.") {
      unlink(directory + "/" + name)
    }
  }

  /// The first seq of the oldest segment still needed by a snapshot covering `covers`.
  private static func oldestNeeded(_ segments: [UInt64], covers: UInt64) -> UInt64 {
    segments.last { $0 <= covers + 1 } ?? 0
  }

  // MARK: - The loop's hooks

  /// How long the loop may sleep before there is work (-1: none).
  package func pollTimeoutMs(_ service: Service) -> Int32 {
    let sync = journal.msUntilSync
    if inFlight != nil { return Int32(max(10, interval * 250)) }  // come back to collect the result
    guard service.store.version != savedVersion else { return sync }
    let wait = Int32(min(max(0, nextDue - Clock.monotonicSeconds()) * 1000 + 1, 60_000))
    return sync < 0 ? wait : min(wait, sync)
  }

  /// Background fsyncs, collecting a finished snapshot, and starting a new one when due and dirty.
  package func tick(_ service: Service) {
    if let failure = journal.tick(nextSeq: service.store.nextSeq) {
      service.log.error("journal fsync failed (\(failure)); moved to a new segment, snapshotting now")
      savedVersion = 0
      nextDue = 0
    }
    service.persistence.journalBytes = journal.totalBytes
    collect(service)
    guard inFlight == nil, service.store.version != savedVersion, Clock.monotonicSeconds() >= nextDue else { return }
    nextDue = Clock.monotonicSeconds() + interval
    do { try journal.rotate(first: service.store.nextSeq) } catch {
      service.log.warn("could not start a new journal segment (\(error)); the snapshot goes ahead")
    }
    let state = capture(service)
    let now = service.clock.now()
    let (path, directory, slot) = (directory + "/" + SnapshotFile.fileName, directory, finished)
    inFlight = state
    inFlightVersion = service.store.version
    queue.async { slot.put(Persistence.write(state, createdAt: now, path: path, directory: directory)) }
  }

  /// Waits for a background snapshot, writes a final one if anything changed, and closes the journal.
  package func finish(_ service: Service) {
    if inFlight != nil { queue.sync {} }
    collect(service)
    if service.store.version != savedVersion {
      try? journal.rotate(first: service.store.nextSeq)
      let state = capture(service)
      let path = directory + "/" + SnapshotFile.fileName
      record(Persistence.write(state, createdAt: service.clock.now(), path: path, directory: directory), service)
    }
    journal.close()
  }

  private func collect(_ service: Service) {
    guard inFlight != nil, let outcome = finished.take() else { return }
    inFlight = nil
    if record(outcome, service) { savedVersion = inFlightVersion }  // on failure: still dirty, retried next interval
  }

  @discardableResult
  private func record(_ outcome: SnapshotOutcome, _ service: Service) -> Bool {
    if let error = outcome.error {
      service.log.error("snapshot failed: \(error)")
      return false
    }
    service.persistence.lastSnapshotAt = outcome.createdAt
    service.persistence.snapshotSeq = outcome.coversSeq
    // The previous snapshot is kept as a fallback, so keep the journal it needs.
    journal.deleteSegments(before: Persistence.oldestNeeded(journal.segments, covers: latestCovers))
    latestCovers = outcome.coversSeq
    return true
  }

  private func capture(_ service: Service) -> SnapshotState {
    SnapshotState(items: service.store.held, nextSeq: service.store.nextSeq, coversSeq: service.store.nextSeq - 1)
  }

  /// Writes the snapshot to a temp file, keeps the current one as `snapshot.prev.json`, and renames.
  private static func write(_ state: SnapshotState, createdAt: Int64, path: String, directory: String) -> SnapshotOutcome {
    let bytes = SnapshotFile.encode(state, createdAt: createdAt)
    do {
      try FileIO.writeAtomically(bytes, to: path, directory: directory, keepingPrevious: directory + "/" + Recovery.previousSnapshot)
      return SnapshotOutcome(error: nil, createdAt: createdAt, coversSeq: state.coversSeq)
    } catch {
      return SnapshotOutcome(error: error, createdAt: createdAt, coversSeq: state.coversSeq)
    }
  }
}

/// How a background snapshot ended.
private struct SnapshotOutcome: Sendable {
  var error: FileError?
  var createdAt: Int64
  var coversSeq: UInt64
}
