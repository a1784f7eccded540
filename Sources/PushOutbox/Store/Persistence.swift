import Dispatch
import Synchronization

/// A failure before serving: a message for stderr and the process exit code.
package struct StartupError: Error, Sendable {
  package var message: String
  package var exitCode: Int32
}

/// Keeps the store's files: loads the snapshot at start, writes a new one every interval while
/// the store is dirty (on a background queue, so requests keep being answered), and a final one at exit.
package final class Persistence {
  package let directory: String
  private var snapshotPath: String { directory + "/" + SnapshotFile.fileName }
  private let interval: Double
  private var savedVersion: UInt64 = 0
  private var nextDue: Double
  private let queue = DispatchQueue(label: "push-outbox.snapshot")
  private let finished = OutcomeSlot()
  private var inFlight = false
  private var inFlightVersion: UInt64 = 0


  /// Opens the store directory and loads its snapshot into `service`.
  package init(directory: String, service: Service) throws(StartupError) {
    self.directory = directory
    self.interval = service.config.snapshotInterval
    self.nextDue = Clock.monotonicSeconds() + interval
    do {
      try FileIO.makeDirectories(directory)
      try removeLeftoverTempFiles()
      guard let bytes = try FileIO.read(snapshotPath) else { return }
      let state = try SnapshotFile.decode(bytes, path: snapshotPath)
      for item in state.items { service.store.append(item, clientID: false) }
      service.store.advanceSeq(to: state.nextSeq)
      service.persistence.snapshotSeq = state.coversSeq
      savedVersion = service.store.version
      service.log.info("loaded \(state.items.count) items from \(snapshotPath)")
    } catch let error as FileError {
      throw StartupError(message: "cannot open the store: \(error)", exitCode: 1)
    } catch let error as SnapshotError {
      throw Persistence.startupError(error)
    } catch {
      throw StartupError(message: "cannot open the store: \(error)", exitCode: 1)
    }
  }

  private static func startupError(_ error: SnapshotError) -> StartupError {
    switch error {
    case .unreadable(let file): StartupError(message: "cannot read the snapshot: \(file)", exitCode: 1)
    case .corrupt(let path, let reason):
      StartupError(message: "the snapshot \(path) is corrupt (\(reason)); it was left untouched", exitCode: 1)
    case .newerVersion(let path, let version):
      StartupError(message: "\(path) has format version \(version), newer than this build reads; nothing was touched", exitCode: 2)
    }
  }

  private func removeLeftoverTempFiles() throws(FileError) {
    for name in try FileIO.list(directory) where name.hasPrefix(SnapshotFile.fileName + ".tmp.") {
      unlink(directory + "/" + name)
    }
  }

  /// How long the loop may sleep before a snapshot is due (-1: nothing to do).
  package func pollTimeoutMs(_ service: Service) -> Int32 {
    if inFlight { return Int32(max(10, interval * 250)) }  // come back to collect the result
    if service.store.version == savedVersion { return -1 }
    let wait = max(0, nextDue - Clock.monotonicSeconds())
    return Int32(min(wait * 1000 + 1, 60_000))
  }

  /// Collects a finished background snapshot and starts a new one when due and dirty.
  package func tick(_ service: Service) {
    collect(service)
    guard !inFlight, service.store.version != savedVersion, Clock.monotonicSeconds() >= nextDue else { return }
    nextDue = Clock.monotonicSeconds() + interval
    let state = capture(service)
    let version = service.store.version
    let now = service.clock.now()
    let path = snapshotPath
    let directory = directory
    inFlight = true
    inFlightVersion = version
    queue.async { [finished] in
      let outcome = Persistence.write(state, createdAt: now, path: path, directory: directory)
      finished.value.withLock { $0 = outcome }
    }
  }

  /// Waits for a background snapshot, then writes a final one if anything changed.
  package func finish(_ service: Service) {
    if inFlight { queue.sync {} }
    collect(service)
    guard service.store.version != savedVersion else { return }
    let outcome = Persistence.write(capture(service), createdAt: service.clock.now(), path: snapshotPath, directory: directory)
    record(outcome, service)
    if outcome.error == nil { savedVersion = service.store.version }
  }

  private func collect(_ service: Service) {
    guard inFlight, let outcome = finished.take() else {
      return
    }
    inFlight = false
    record(outcome, service)
    if outcome.error == nil { savedVersion = inFlightVersion }  // on failure: still dirty, retried next interval
  }

  private func record(_ outcome: SnapshotOutcome, _ service: Service) {
    if let error = outcome.error {
      service.log.error("snapshot failed: \(error)")
      return
    }
    service.persistence.lastSnapshotAt = outcome.createdAt
    service.persistence.snapshotSeq = outcome.coversSeq
  }

  private func capture(_ service: Service) -> SnapshotState {
    SnapshotState(items: service.store.held, nextSeq: service.store.nextSeq, coversSeq: service.store.nextSeq - 1)
  }

  private static func write(_ state: SnapshotState, createdAt: Int64, path: String, directory: String) -> SnapshotOutcome {
    let bytes = SnapshotFile.encode(state, createdAt: createdAt)
    do {
      try FileIO.writeAtomically(bytes, to: path, directory: directory)
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

/// Where the snapshot queue leaves its outcome for the request loop to collect.
private final class OutcomeSlot: Sendable {
  let value = Mutex<SnapshotOutcome?>(nil)

  func take() -> SnapshotOutcome? {
    value.withLock { slot in
      defer { slot = nil }
      return slot
    }
  }
}
