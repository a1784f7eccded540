import OutboxSupport

/// Upgrades a format-1 store (`snapshot.json`, `snapshot.prev.json`, `journal.*`) to format 2.
///
/// The format-1 files are read with the format-1 reader (its checks and quarantine included), the
/// items are written as one format-2 segment, the checkpoint is made durable, and only then are the
/// format-1 files removed. A crash before the checkpoint leaves format 1 in charge; after it, the
/// leftovers are removed at the next start.
enum UpgradeV1 {
  static let snapshotNames = ["snapshot.json", "snapshot.prev.json"]

  static func isFormatV1(_ name: String) -> Bool {
    snapshotNames.contains(name) || (name.hasPrefix("journal.") && name.utf8.count == 28)
  }

  static func hasFormatV1Files(_ names: [String]) -> Bool { names.contains(where: isFormatV1) }

  static func removeFormatV1Files(directory: String, names: [String]) {
    for name in names where isFormatV1(name) { unlink(directory + "/" + name) }
    try? FileIO.syncDirectory(directory)
  }

  static func run(
    directory: String, names: [String], store: Store, log: Log, outcome: inout RecoveryOutcome
  ) throws(StartupError) {
    // Segments beside format-1 files are from an upgrade cut short: start it again.
    for name in names where SegmentFormat.first(ofName: name) != nil { unlink(directory + "/" + name) }
    let v1 = try RecoveryV1.run(directory: directory, store: store.items, log: log)
    outcome.warnings = v1.warnings
    let first = store.items.firstSeq ?? store.items.nextSeq
    if store.items.count > 0 {
      let bytes = SegmentWriter.content(of: store.items, from: 0, to: nil).bytes
      let segment = SegmentInfo(first: first, bytes: bytes.count, items: store.items.count)
      do {
        try FileIO.writeAtomically(
          bytes, to: directory + "/" + SegmentFormat.name(first: segment.first), directory: directory)
      } catch {
        throw .refused("upgrade_failed", "cannot write the upgraded store: \(error)")
      }
      outcome.segments = [segment]
    }
    let checkpoint = Checkpoint(
      createdAt: Clock.system.now(), coversSeq: store.items.nextSeq - 1, nextSeq: store.items.nextSeq,
      firstSeq: store.items.firstSeq ?? store.items.nextSeq, items: store.items.count,
      segments: outcome.segments.map(\.first), leases: [], held: outcome.segments.map(\.items))
    do {
      try FileIO.writeAtomically(checkpoint.encode(), to: directory + "/" + Checkpoint.fileName, directory: directory)
    } catch {
      throw .refused("upgrade_failed", "cannot write the upgraded store: \(error)")
    }
    outcome.checkpoint = checkpoint
    // The segments replay could not apply hold acknowledged items nobody has read: keep a copy.
    for name in v1.setAside { StoreFiles.quarantine(directory: directory, name: name) }
    removeFormatV1Files(directory: directory, names: names)
    log.info("upgraded \(directory) from format 1 to format 2: \(store.items.count) items")
  }
}
