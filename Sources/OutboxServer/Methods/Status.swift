import OutboxDelivery
import OutboxJSON
import OutboxStore
import OutboxSupport

/// `status {}` → the version, the store, pending counts and bytes, snapshot and journal facts,
/// the live lease and any recovery warnings. Transcript: `Protocol/transcripts/basic.txt`.
package enum Status: RPCMethod {
  package static let name = "status"
  /// Counts reflect only committed saves.
  package static let commitsFirst = true

  package static func handle(_ params: inout Params, _ service: Service) throws -> ObjectResult {
    _ = try params.finish()
    service.expireLeases()
    let store = service.store.items
    var pending = [JSONMember("total", .int(Int64(service.store.count)))]
    for kind in ItemKind.allCases {
      pending.append(JSONMember(kind.wireName, .int(Int64(store.counts[Int(kind.rawValue)]))))
    }
    service.disk?.refresh()
    let facts = service.disk?.status ?? FileStatus()
    let now = service.clock.now()
    service.observeHealth(now: now)
    let (health, problems) = service.health(now: now)
    let store_ = service.store
    return ObjectResult([
      JSONMember("health", .string(health.rawValue)),
      JSONMember("problems", .array(problems.map(\.json))),
      JSONMember("version", .string(embeddedVersion)),
      JSONMember("store", service.config.effectiveStorePath.map(JSONValue.string) ?? .null),
      JSONMember("pending", .object(pending)),
      JSONMember("bytes", .int(Int64(store.bytes))),
      JSONMember("lastSnapshotAt", facts.lastSnapshotAt.map { .string(UTCTime.format(ms: $0)) } ?? .null),
      JSONMember("snapshotSeq", .int(Int64(facts.snapshotSeq))),
      JSONMember("journalBytes", .int(facts.journalBytes)),
      JSONMember("storeBytes", .int(Int64(store_.storeBytes))),
      JSONMember("maxStoreBytes", store_.cap.flatMap { service.disk == nil ? nil : .int(Int64($0.max)) } ?? .null),
      JSONMember("fsync", .string(service.config.fsync.rawValue)),
      JSONMember("lease", service.store.leases.first { $0.origin == .flush }.map { leaseJSON($0) } ?? .null),
      JSONMember("recovery", .array(facts.recovery + service.store.notices)),
      JSONMember("deadLetters", .int(Int64(store.deadCount))),
      JSONMember("delivery", deliveryJSON(service, now: now)),
      JSONMember("relay", service.relay?.statusJSON(nowMs: now) ?? .null),
    ])
  }

  /// `status.delivery`, with `fleet` when this process is a fleet deliverer (`--deliver --from`).
  private static func deliveryJSON(_ service: Service, now: Int64) -> JSONValue {
    guard let summary = service.delivery?.summary.json(nowMs: now) else { return .null }
    guard let fleet = service.fleet, case .object(let members) = summary else { return summary }
    return .object(members + [JSONMember("fleet", fleet.statusJSON(nowMs: now))])
  }

  private static func leaseJSON(_ lease: Lease) -> JSONValue {
    .object([
      JSONMember("flushId", .string(lease.flushId)), JSONMember("count", .int(Int64(lease.seqs.count))),
      JSONMember("expiresAt", .string(UTCTime.format(ms: lease.expiresAt))),
    ])
  }
}
