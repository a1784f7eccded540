/// The state the methods work on: the store, the clock, id generation and the configuration.
///
/// Owned by the request loop and used from that one thread only.
package final class Service {
  package let config: Configuration
  package let clock: Clock
  package let log: Log
  package var store = PendingStore()
  package var lease: Lease?
  /// The most recent acked or drained flush ids (bounded).
  package var finishedFlushIds: [String] = []
  package var ids: IDGenerator
  /// Facts about persistence that `status` reports; kept up to date by the persistence layer.
  package var persistence = PersistenceStatus()
  /// The journal, when the store is on disk.
  package var journal: Journal?
  /// Saves made since the last journal commit; rolled back if the commit fails (see `Server.commit`).
  package var uncommitted: [UncommittedSave] = []
  /// The last journal failure, until a commit succeeds again.
  package var storageError: FileError?

  package init(config: Configuration, log: Log? = nil) {
    self.config = config
    self.clock = config.fixedClock.map(Clock.fixed) ?? .system
    self.log = log ?? Log(level: config.logLevel)
    self.ids = IDGenerator(seed: config.idSeed)
    store.limits = config.store
  }

  package func newID(at ms: Int64) -> String { ids.make(ms: ms) }
}

/// A save whose journal record is not written yet, and where its response sits in the output.
package struct UncommittedSave: Sendable {
  package var seq: UInt64
  package var response: Range<Int>? = nil
  package var id: RequestID? = nil
}

extension Service {
  /// Journals that items left the store (a drain or an ack).
  package func recordRemoval(_ seqs: [UInt64]) {
    guard let journal, !seqs.isEmpty else { return }
    journal.remove(seqs, recordSeq: store.takeSeq())
  }
}

/// What `status` reports about files.
package struct PersistenceStatus: Sendable {
  package var lastSnapshotAt: Int64?
  package var snapshotSeq: UInt64 = 0
  package var journalBytes: Int64 = 0
  package var recovery: [JSONValue] = []
  package init() {}
}

/// The answer to every save: the item's id, its seq and how many items are held.
package struct SaveResult: JSONEncodable {
  package var id: String
  package var seq: UInt64
  package var pending: Int
  package var duplicate = false
  package var warnings: [Issue] = []

  package func encodeJSON(into out: inout [UInt8]) {
    out.appendASCII("{\"id\":")
    out.appendJSONString(id)
    out.appendASCII(",\"seq\":")
    out.appendUInt(seq)
    out.appendASCII(",\"pending\":")
    out.appendInt(Int64(pending))
    if duplicate { out.appendASCII(",\"duplicate\":true") }
    if !warnings.isEmpty {
      out.appendASCII(",\"warnings\":")
      JSONValue.array(warnings.map(\.json)).encodeJSON(into: &out)
    }
    out.append(UInt8(ascii: "}"))
  }
}

extension Service {
  /// Stores one item built by a save method, or returns the original for a repeated client id.
  ///
  /// - Parameters:
  ///   - clientID: the optional client-supplied `id`; a repeat returns the first item and stores nothing.
  ///   - body: the item's members after the header, each preceded by a comma.
  package func save(
    kind: ItemKind, clientID: String?, user: UserIdentifier?, attribute: String?, body: [UInt8],
    warnings: [Issue]
  ) throws(StoreError) -> SaveResult {
    if let clientID, let original = store.item(clientID: clientID) {
      return SaveResult(id: original.id, seq: original.seq, pending: store.count, duplicate: true)
    }
    let now = clock.now()
    var item = PendingItem(
      seq: 0, id: clientID ?? newID(at: now), kind: kind, savedAt: now, user: user, attribute: attribute, body: body)
    try store.admit(itemBytes: item.byteCount)
    item.seq = store.takeSeq()
    store.append(item, clientID: clientID != nil)
    if let journal {
      journal.add(item)
      uncommitted.append(UncommittedSave(seq: item.seq))
    }
    return SaveResult(id: item.id, seq: item.seq, pending: store.count, warnings: warnings)
  }
}
