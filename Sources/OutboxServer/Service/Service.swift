package import OutboxDelivery
package import OutboxDomain
import OutboxJSON
package import OutboxStore
package import OutboxSupport

/// The state the methods work on: the store, the clock, id generation and the configuration.
///
/// Owned by the request loop and used from that one thread only.
package final class Service {
  package let config: Configuration
  package let clock: Clock
  package let log: Log
  package let store: Store
  /// The store's files, when it has any (nil with `--memory`).
  package private(set) var disk: FileKeeper?
  package var ids: IDGenerator
  /// The last `time` text a save wrote, reused while the millisecond stays the same (a busy loop
  /// stamps many saves within one). The loop's own, as the clock is.
  var timeText = UTCTimeText()
  /// Delivery to Braze, when an endpoint and an API key are configured. Made on first use (after the
  /// store is open); libcurl is loaded only when the first request is sent.
  package lazy var delivery: Deliverer? = {
    guard config.delivery.endpoint != nil, config.delivery.apiKey != nil else { return nil }
    return Deliverer(
      settings: config.delivery, store: store, clock: clock, log: log, batchLimit: config.trackBatchLimit,
      mode: config.trackBatchMode, poster: poster ?? CurlPoster())
  }()
  /// Tests replace the HTTP client.
  package var poster: (any HTTPPoster)?
  /// Saves acknowledged and refused, for `/metrics`.
  package var counters = MetricCounters()
  /// `--metrics-listen` / `--metrics-file`, once started.
  package internal(set) var metrics: MetricsExport?
  /// Calls whose work outlasts their request (`deliverPending`), stepped by `tick`.
  package let longCalls = LongCalls()
  /// When each health problem was first seen (`Service+Health.swift`).
  var healthMemory = HealthMemory()
  /// `shutdown` and `exit` (`Lifecycle`).
  package var lifecycle = Lifecycle()
  /// `--relay nats://…`: pending items published to a NATS stream in the background (`status.relay`).
  package var relay: (any BackgroundWork)?
  /// `--deliver --from nats://…`: this process is one of a fleet's deliverers (`status.delivery.fleet`).
  package var fleet: (any BackgroundWork)?
  /// The fleet's dead letters (`<stream>_DEAD`), in a server started with a NATS address.
  package var fleetDeadLetters: (any FleetDeadLetters)?
  /// The background work running, for `tick`, `pollTimeoutMs` and `finish`.
  private var background: [any BackgroundWork] { [relay, fleet].compactMap { $0 } }

  package init(config: Configuration, log: Log? = nil) {
    self.config = config
    self.clock = config.fixedClock.map(Clock.fixed) ?? .system
    self.log = log ?? Log(level: config.logLevel)
    self.ids = IDGenerator(seed: config.idSeed)
    self.store = Store(limits: config.store)
    store.items.idKey = ids.key
  }

  /// Opens the store directory the configuration names (if any): lock, recovery, journal.
  package func openDisk() throws(StartupError) {
    try startMetrics()
    guard let path = config.effectiveStorePath else { return }
    let options = FileOptions(
      directory: path, fsync: config.fsync, snapshotInterval: config.snapshotInterval, acceptLoss: config.acceptLoss,
      loadImageMinBytes: config.loadImageMinBytes)
    disk = try FileKeeper(options, store: store, log: log)
  }

  func newID(at ms: Int64) -> String { ids.make(ms: ms) }

  /// Ends leases whose time is up.
  package func expireLeases(now: Int64? = nil) {
    for lease in store.expireLeases(now: now ?? clock.now()) {
      log.info("lease \(lease.flushId) expired; \(lease.seqs.count) items are pending again")
    }
  }

  /// All periodic work, in one place, for the loop and the one-shots: leases whose time is up come
  /// back first (so delivery and flushes see their items), then delivery starts what it can and long
  /// calls take a step, then the disk takes a snapshot when one is due. `busy`: requests are waiting.
  package func tick(now: Int64, busy: Bool = false) {
    // Long calls and the relay read held items as written: a write in flight lands first.
    if !longCalls.isEmpty || !background.isEmpty { store.settleWrite() }
    expireLeases(now: now)
    delivery?.tick(busy: busy)
    if !longCalls.isEmpty { longCalls.step(self) }
    for work in background { work.tick(service: self, busy: busy) }
    disk?.tick(store, now: now)
    observeHealth(now: now)
    if metrics != nil { publishMetrics() }
  }

  /// How long the loop may wait for input before `tick` has work (-1: until input comes).
  package func pollTimeoutMs() -> Int32 {
    var timeout = Self.sooner(disk?.pollTimeoutMs(store) ?? -1, delivery?.pollTimeoutMs() ?? -1)
    if metrics != nil { timeout = Self.sooner(timeout, metricsPollTimeoutMs()) }
    if !longCalls.isEmpty { timeout = Self.sooner(timeout, longCalls.pollTimeoutMs(self)) }
    for work in background { timeout = Self.sooner(timeout, work.pollTimeoutMs()) }
    if let expiry = store.nextLeaseExpiry {
      timeout = Self.sooner(timeout, Int32(clamping: max(0, expiry - clock.now()) + 1))
    }
    return timeout
  }

  /// The last work before exit: requests in flight settle, what they changed is committed to the
  /// journal (a one-shot has no reply to commit it before), then the final snapshot.
  package func finish() {
    delivery?.finish()
    for work in background { work.finish(service: self) }
    if let failure = store.commit() {
      log.error("journal write failed at exit (\(failure)); the last changes are not kept")
    }
    disk?.finish(store, now: clock.now())
    publishMetrics(force: true)
    finishMetrics()
  }

  /// The shorter of two poll timeouts (-1: none).
  private static func sooner(_ a: Int32, _ b: Int32) -> Int32 { a < 0 ? b : b < 0 ? a : min(a, b) }
}

/// The answer to every save: the item's id, its seq and how many items are held.
package struct SaveResult: MethodResult {
  package var receipt: SaveReceipt
  package var warnings: [Issue] = []
  /// What was saved (for the `/metrics` count of acknowledged saves).
  package var kind = ItemKind.customEvent

  /// The reply waits for the journal commit (`Answer.save`).
  package var awaitsCommit: Bool { receipt.awaitsCommit }
  package var answer: Answer { .save(self) }

  package func encodeJSON(into out: inout [UInt8]) {
    out.appendASCII("{\"id\":")
    receipt.id.appendJSON(to: &out)
    out.appendASCII(",\"seq\":")
    out.appendUInt(receipt.seq)
    out.appendASCII(",\"pending\":")
    out.appendInt(Int64(receipt.pending))
    if receipt.duplicate { out.appendASCII(",\"duplicate\":true") }
    if !warnings.isEmpty {
      out.appendASCII(",\"warnings\":")
      JSONValue.array(warnings.map(\.json)).encodeJSON(into: &out)
    }
    out.append(UInt8(ascii: "}"))
  }
}

/// One item a save method checked and built, not yet stored: what `Service.save` takes.
package struct PreparedSave: Sendable {
  package var kind: ItemKind
  package var clientID: String?
  package var user: UserIdentifier?
  package var attribute: String?
  /// The item's members after the header, each preceded by a comma.
  package var body: [UInt8]
  package var warnings: [Issue]

  package init(
    kind: ItemKind, clientID: String?, user: UserIdentifier?, attribute: String?, body: [UInt8], warnings: [Issue]
  ) {
    self.kind = kind
    self.clientID = clientID
    self.user = user
    self.attribute = attribute
    self.body = body
    self.warnings = warnings
  }
}

extension Service {
  /// Stores an item a save method prepared (see `PreparedSave`).
  package func save(_ item: PreparedSave) throws(StoreError) -> SaveResult {
    try save(
      kind: item.kind, clientID: item.clientID, hasUser: item.user != nil, body: item.body, warnings: item.warnings)
  }

  /// Stores one item built by a save method, or returns the original for a repeated client id.
  ///
  /// - Parameters:
  ///   - clientID: the optional client-supplied `id`; a repeat returns the first item and stores nothing.
  ///   - body: the item's members after the header, each preceded by a comma.
  ///   - now: the time already read for this save (its body's `time`), else the clock is read here.
  package func save(
    kind: ItemKind, clientID: String?, hasUser: Bool, body: [UInt8], warnings: [Issue], now: Int64? = nil
  ) throws(StoreError) -> SaveResult {
    let outcome: Result<SaveResult, StoreError> = body.withUnsafeBytes { body in
      do throws(StoreError) {
        return .success(
          try save(kind: kind, clientID: clientID, hasUser: hasUser, body: body, warnings: warnings, now: now))
      } catch {
        return .failure(error)
      }
    }
    return try outcome.get()
  }

  /// `save` of a body in memory the caller holds (the fast save's reused buffer); `parts`: where the
  /// body's user and label end, as its writer knows them (`BodyParts`).
  package func save(
    kind: ItemKind, clientID: String?, hasUser: Bool, body: UnsafeRawBufferPointer, warnings: [Issue],
    now: Int64? = nil, parts: BodyParts? = nil
  ) throws(StoreError) -> SaveResult {
    let now = now ?? clock.now()
    let id: ItemID
    if let clientID {
      id = ItemID(client: Array(clientID.utf8))
    } else {
      let words = IDGenerator.words(key: store.items.idKey, ms: now, counter: store.items.nextSeq)
      id = ItemID(high: words.high, low: words.low)
    }
    let receipt = try store.save(kind: kind, id: id, savedAt: now, hasUser: hasUser, body: body, parts: parts)
    return SaveResult(receipt: receipt, warnings: receipt.duplicate ? [] : warnings, kind: kind)
  }

}
