/// Group commit: the journal records of a burst are written (and, with `--fsync always`, flushed)
/// before any of the burst's responses. If that fails, the burst's saves are taken back out of the
/// store and their responses become `-32003 storage_unavailable`: a save is acknowledged only once
/// its record is written.
extension Server {
  /// Commits the journal records gathered since the last commit.
  package func commit() {
    defer { service.uncommitted.removeAll(keepingCapacity: true) }
    guard let journal = service.journal, journal.hasPendingRecords else { return }
    do {
      try journal.commit()
      service.storageError = nil
    } catch {
      rollBack(error)
    }
  }

  private func rollBack(_ error: FileError) {
    let saves = service.uncommitted
    service.log.error("journal write failed (\(error)); \(saves.count) saves were not acknowledged")
    service.storageError = error
    service.store.remove(seqs: saves.map(\.seq).sorted())
    let refusal = StoreError.storageUnavailable(error.description).rpcError
    var rebuilt: [UInt8] = []
    rebuilt.reserveCapacity(output.count)
    var cursor = 0
    for save in saves {
      guard let range = save.response, let id = save.id else { continue }
      rebuilt.append(contentsOf: output[cursor..<range.lowerBound])
      Server.appendError(refusal, id: id, to: &rebuilt)
      cursor = range.upperBound
    }
    rebuilt.append(contentsOf: output[cursor...])
    output = rebuilt
  }
}

extension Server {
  /// The one stdout line for a store refusal at start-up (`-32005`, `-32006`), with `id: null`.
  package static func startupFailureLine(_ error: RPCError) -> String {
    var out: [UInt8] = []
    appendError(error, id: .null, to: &out)
    return String(decoding: out, as: UTF8.self)
  }
}
