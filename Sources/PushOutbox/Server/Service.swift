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
  /// Set while a burst of saves is being made durable; see `Server.commit`.
  package var uncommittedSaves = 0

  package init(config: Configuration, log: Log? = nil) {
    self.config = config
    self.clock = config.fixedClock.map(Clock.fixed) ?? .system
    self.log = log ?? Log(level: config.logLevel)
    self.ids = IDGenerator(seed: config.idSeed)
    store.limits = config.store
  }

  package func newID(at ms: Int64) -> String { ids.make(ms: ms) }
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
    uncommittedSaves += 1
    return SaveResult(id: item.id, seq: item.seq, pending: store.count, warnings: warnings)
  }
}
