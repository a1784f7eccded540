import OutboxStore
import OutboxSupport

/// The items of one request, chosen on the loop thread without building any JSON: the body is
/// built from them on the background queue.
struct Cut: Sendable {
  var items: [PendingItem] = []
  var superseded: Set<UInt64> = []
  /// Every item the request accounts for (its objects and the superseded values they replace).
  var seqs: [UInt64] = []
  var objects = 0
  var users: Set<UserNumber> = []
}

/// Chooses what delivery sends next, in per-user order: a pending split first, else the oldest
/// available items whose users have nothing in flight. It owns the users in flight (`hold`,
/// `free`), the halves of refused batches, and each item's user number.
final class PickingQueue {
  private let store: Store
  private let batchLimit: Int
  private let mode: TrackBatchMode
  /// Users of requests in flight, and how many requests hold users.
  private var busyUsers: Set<UserNumber> = []
  private var held = 0
  /// Halves of batches Braze refused with a 400, sent before anything else.
  private var splits: [[UInt64]] = []
  /// Users of items looked at, by seq, as numbers handed out by `users`.
  private var userOfSeq: [UInt64: UserNumber] = [:]
  private var users = UserNumbers()
  /// After a scan found nothing to send: nothing is scanned again before this monotonic time
  /// unless an answer arrives or the item count moves, so a loop tick costs nothing while every
  /// waiting item's user is busy.
  private var quietUntil = 0.0
  /// The answers applied and the item count when that scan ran.
  private var quietSeen: (changes: Int, count: Int)?
  /// Bumped by every answer applied: the items or users a scan saw may have changed.
  private var changes = 0
  /// Items dead-lettered for having no identifier, in all.
  private(set) var noIdentifierCount = 0

  /// How long a scan that found nothing keeps the next ones from running (without an answer).
  static let quietSeconds = 0.005
  /// Rows a scan looks at, at most.
  static let scanRows = 8192

  init(store: Store, batchLimit: Int, mode: TrackBatchMode) {
    self.store = store
    self.batchLimit = batchLimit
    self.mode = mode
  }

  /// The next request's items, or nil when nothing can be sent now. Items with no identifier
  /// become dead letters (`no_identifier`) on the way.
  func next(maxObjects: Int) -> Cut? {
    if let split = nextSplit() { return split }
    let now = Clock.monotonicSeconds()
    let seen = (changes: changes, count: store.count)
    if let quiet = quietSeen, quiet == seen, now < quietUntil { return nil }
    let found = scan(maxObjects: maxObjects)
    if found == nil { (quietSeen, quietUntil) = (seen, now + Self.quietSeconds) }
    return found
  }

  /// A request for `users` is in flight.
  func hold(_ users: Set<UserNumber>) {
    busyUsers.formUnion(users)
    held += 1
  }

  /// The request for `users` was answered: an answer may change what a scan finds.
  func free(_ users: Set<UserNumber>) {
    busyUsers.subtract(users)
    held -= 1
  }

  /// Answers were applied: the next `next` scans again.
  func answered() { changes += 1 }

  /// The next `next` scans, however recently one found nothing (a pass always scans).
  func wake() { quietUntil = 0 }

  /// Items delivered or dead: their user numbers are not needed again.
  func forget(_ seqs: [UInt64]) {
    for seq in seqs { userOfSeq[seq] = nil }
  }

  /// Queues the two halves of a refused batch, to be sent before anything else.
  func split(_ seqs: [UInt64]) {
    let half = seqs.count / 2
    splits.insert(contentsOf: [Array(seqs[..<half]), Array(seqs[half...])], at: 0)
  }

  /// A request failed in a way that returns its items to pending (a retryable answer or a stop):
  /// the halves still queued go back to pending too. A queued half may be the newer sibling of the
  /// one that failed, and sent first it would overtake its user's older items (README "Deliver to
  /// Braze": a later value never overtakes an earlier one). The next scan picks everything again in
  /// saved order, and a refused object is split out once more.
  func dropSplits() { splits.removeAll() }

  /// The oldest available items (at most `scanRows` rows looked at) whose users have nothing in flight.
  private func scan(maxObjects: Int) -> Cut? {
    let limit = max(1, min(batchLimit, maxObjects))
    var blocked = busyUsers
    for seqs in splits { blocked.formUnion(seqs.compactMap(user(seq:))) }
    let items = store.items
    let pick = store.pickAvailable(
      max: mode == .combined ? limit : 2 * limit, visitLimit: Self.scanRows,
      identified: { items.has(.hasUser, row: $0) && user(seq: items.seq(row: $0)) != nil },
      wanted: { user(seq: items.seq(row: $0)).map { !blocked.contains($0) } ?? false })
    noIdentifierCount += pick.noIdentifier.count
    return pick.items.isEmpty ? nil : cut(pick.items, limit: limit, mode: mode)
  }

  /// The first body's worth of `items` (in seq order), cut by the rule `UsersTrack.batches` uses.
  func cut(_ items: [PendingItem], limit: Int, mode: TrackBatchMode) -> Cut {
    var cut = Cut()
    cut.superseded = items.supersededSeqs
    var carried: [PendingItem] = []
    var fill = BatchFill(limit: limit, mode: mode)
    for item in items {
      if cut.superseded.contains(item.seq) {
        carried.append(item)
        continue
      }
      let isEvent = item.kind == .customEvent
      if fill.isFull(adding: isEvent) { break }
      fill.add(isEvent: isEvent)
      cut.items += carried + [item]
      carried.removeAll()
    }
    cut.seqs = cut.items.map(\.seq)
    cut.objects = fill.objects
    cut.users = Set(cut.seqs.compactMap(user(seq:)))
    return cut
  }

  /// The number of the item's user (its body read once per item, then remembered); nil without one.
  func user(seq: UInt64) -> UserNumber? {
    if let number = userOfSeq[seq] { return number == UserNumbers.none ? nil : number }
    let items = store.items
    guard let row = items.row(of: seq) else { return nil }
    let key = UserKey.of(row: row, in: items)
    if max(userOfSeq.count, users.count) > 1 << 20 && held == 0 && splits.isEmpty {  // nothing holds a number
      userOfSeq.removeAll()
      users = UserNumbers()
    }
    let number = key.map { users.number(for: $0) } ?? UserNumbers.none
    userOfSeq[seq] = number
    return number == UserNumbers.none ? nil : number
  }

  /// The first pending split whose users are free: all of its items, in one request.
  private func nextSplit() -> Cut? {
    while let seqs = splits.first {
      let table = store.items.table
      let items = store.items.items(seqs: seqs).filter { item in
        table.row(of: item.seq).map { !table.has(.leased, $0) && !table.has(.dead, $0) } ?? false
      }
      guard !items.isEmpty else {
        splits.removeFirst()
        continue
      }
      guard Set(items.compactMap { user(seq: $0.seq) }).isDisjoint(with: busyUsers) else { return nil }
      splits.removeFirst()
      return cut(items, limit: Int.max, mode: .perArray)
    }
    return nil
  }
}
