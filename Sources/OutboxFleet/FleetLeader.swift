import OutboxJSON
import OutboxNATS
import OutboxSupport

/// Leader election among a fleet's deliverers (README "Fleet"): the key `leader` in the JetStream
/// key-value bucket `<stream>_LEADER`, whose TTL is the lease.
///
/// A deliverer takes the key with create-if-absent and renews it with compare-and-set about every
/// third of the lease. It counts itself leader only until one lease after the start of its last
/// successful write: the server keeps the key at least that long, so no one else can hold it then.
/// A failed renewal (conflict, error or no answer) ends its leadership at once. A standby tries to
/// create the key at the same pace; the key of a dead leader expires a lease after its last renewal,
/// so a standby takes over within two leases.
struct FleetLeader {
  enum Role: String { case leader, standby }

  let kv: NATSKeyValue
  let leaseSeconds: Double
  /// `{"id","pid","since"}` of this deliverer.
  private let identity: [UInt8]
  private var revision: UInt64?
  private var validUntil = 0.0
  private var nextAttempt = 0.0
  private(set) var role = Role.standby
  /// Wall-clock ms when this deliverer became leader (0 while standby).
  private(set) var leaderSince: Int64 = 0
  static let key = "leader"

  init(kv: NATSKeyValue, leaseSeconds: Double, pid: Int32) {
    self.kv = kv
    self.leaseSeconds = leaseSeconds
    var bytes: [UInt8] = []
    JSONValue.object([
      JSONMember("id", .string(String(UInt64.random(in: 0...UInt64.max), radix: 36))),
      JSONMember("pid", .int(Int64(pid))),
    ]).encodeJSON(into: &bytes)
    identity = bytes
  }

  /// Creates the bucket when missing (TTL: the lease, rounded up to whole seconds).
  func ensureBucket(deadline: Double) throws(NATSError) {
    try kv.ensureBucket(ttlSeconds: Int64(leaseSeconds.rounded(.up)), deadline: deadline)
  }

  /// Leader now, by the local lease (checked before every send).
  var isLeader: Bool { revision != nil && Clock.monotonicSeconds() < validUntil }

  /// Until when (monotonic seconds) this deliverer may start a request: its lease less a margin
  /// for the time between this check and the request leaving; nil while it does not lead.
  var sendBy: Double? {
    guard revision != nil else { return nil }
    let until = validUntil - min(0.5, leaseSeconds / 10)
    return Clock.monotonicSeconds() < until ? until : nil
  }

  /// When the next write is due (monotonic seconds).
  var nextAttemptAt: Double { nextAttempt }

  /// Takes or renews the key when due. Returns the new role when it changed. A write that fails
  /// (no answer, a closed connection, a refusal other than a lost race) is thrown as `.closed`: the
  /// connection is suspect, and the session reconnects with backoff (issue 40: a standby whose create
  /// failed, or a leader whose renewal failed, used to tick on a dead connection for good). The
  /// caller's `lose` on disconnect ends a leadership this write was meant to renew.
  mutating func tick() throws(NATSError) -> (Role, String)? {
    let start = Clock.monotonicSeconds()
    if revision != nil && start >= validUntil { return lose("the lease ran out before a renewal") }
    guard start >= nextAttempt else { return nil }
    nextAttempt = start + leaseSeconds / 3
    let deadline = start + leaseSeconds / 3
    do throws(NATSError) {
      let write: NATSKeyValue.Write
      if let revision {
        write = try kv.update(Self.key, identity, revision: revision, deadline: deadline)
      } else {
        write = try kv.create(Self.key, identity, deadline: deadline)
      }
      switch write {
      case .stored(let stored):
        revision = stored
        validUntil = start + leaseSeconds
        guard role == .standby else { return nil }
        role = .leader
        leaderSince = Clock.system.now()
        return (.leader, "took the lease (revision \(stored))")
      case .conflict(let text):
        return revision == nil ? nil : lose("the renewal was refused (\(text))")
      }
    } catch {
      let what = revision == nil ? "taking the lease" : "renewing the lease"
      throw NATSError(error.kind == .auth ? .auth : .closed, "\(what) failed: \(error.description)")
    }
  }

  /// Stops counting itself leader (a failed renewal, a lost connection).
  mutating func lose(_ why: String) -> (Role, String)? {
    revision = nil
    validUntil = 0
    leaderSince = 0
    guard role == .leader else { return nil }
    role = .standby
    return (.standby, why)
  }
}
