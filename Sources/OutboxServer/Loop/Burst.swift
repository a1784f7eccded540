import OutboxJSON
import OutboxJSONRPC
import OutboxStore
import OutboxSupport

/// One burst's replies, from the first message the loop reads to the write that sends them: the
/// reply draft, the replies that wait for a commit (holes), what the commits decided for them
/// (settlement), the one-request-one-reply ledger, and the output the loop writes.
///
/// Group commit: the journal records of a burst are written (and, with `--fsync always`, flushed)
/// before any of the burst's replies. A save's reply is written into the draft at once and marked
/// as a hole; another result that waits for the commit is only marked. `render` commits what is
/// still pending and writes every reply into `output`, as written or as `-32003
/// storage_unavailable` in its place when that commit failed (the store took the saves back): a
/// save is acknowledged only once its record is written. Nothing written into `output` is ever
/// patched afterwards.
///
/// A burst of saves alone may also be handed over whole (`handOver`) while its records are written
/// off the loop's thread (`Store.beginCommit`); `renderWritten` renders it once that write landed.
/// A save is refused exactly when a failed write took it back (`Store.isRefused`), whichever commit
/// settles its reply.
struct Burst {
  /// Response bytes ready to write: whole lines, each ending in `\n`.
  private(set) var output: [UInt8] = []
  /// This burst's response bytes, without the replies that wait for a commit.
  private var draft: [UInt8] = []
  /// Replies waiting for a commit, in order, each at its offset in `draft`.
  private var holes: [Hole] = []
  /// How many of `holes` are saves whose replies are already in `draft`.
  private var writtenHoles = 0
  /// Those saves counted for `/metrics` once they stand, per `ItemKind` raw value (0...2).
  private var heldPerKind = SIMD4<Int>()
  /// What this burst's commits decided for `holes`.
  private var settlement = Settlement()
  /// The burst before, handed over while its records are written (`handOver`).
  private var handedOver: HandedOver? = nil
  /// Requests with an id seen and replies rendered, in this burst (see `render`).
  private var ledger = ReplyLedger()

  init() {
    output.reserveCapacity(1 << 16)
    draft.reserveCapacity(1 << 16)
  }

  /// About how many reply bytes the burst holds so far (replies not yet written counted at a
  /// typical size).
  var byteCount: Int { draft.count + (holes.count - writtenHoles) * 96 }

  /// Moves `other`'s output to the end of this one's.
  private mutating func takeOutput(of other: inout Burst) {
    if output.isEmpty {
      swap(&output, &other.output)
    } else {
      output.append(contentsOf: other.output)
      other.clearOutput()
    }
  }

  /// Empties `output` once it is written (letting go of a buffer grown very large).
  mutating func clearOutput() { output.removeAll(keepingCapacity: output.capacity <= 1 << 22) }

  // MARK: - Writing the draft

  /// Where the draft ends now: a reply written after it can be taken back (`discard(from:)`).
  var mark: Int { draft.count }

  /// Takes back what was written into the draft since `mark`.
  mutating func discard(from mark: Int) { draft.removeSubrange(mark...) }

  /// Writes into the draft through `body` (a reply's bytes, written in place).
  @inline(__always)
  mutating func write<R, E: Error>(_ body: (inout [UInt8]) throws(E) -> R) throws(E) -> R { try body(&draft) }

  @inline(__always)
  mutating func append(_ byte: UInt8) { draft.append(byte) }

  // MARK: - The ledger

  /// A request that needs a reply.
  mutating func countRequest() { ledger.requested += 1 }
  /// A reply written into the draft.
  mutating func countReply() { ledger.rendered += 1 }
  /// A long call's request, answered in a later burst.
  mutating func countDeferred() { ledger.deferred += 1 }

  // MARK: - Replies

  /// Records a save's reply: a hole when it waits for the commit, else its bytes at once; then the
  /// line's end.
  @inline(__always)
  mutating func reply(to id: RequestID, _ result: SaveResult, _ service: Service) {
    ledger.requested += 1
    if result.awaitsCommit {
      holdSave(result, id: id)
    } else {
      if !result.receipt.duplicate { service.counters.countSave(result.kind) }
      Self.appendReply(result, id: id, to: &draft)
      ledger.rendered += 1
    }
    draft.append(UInt8(ascii: "\n"))
  }

  /// Writes a save's reply into `draft` now, as a hole its commit may still refuse.
  mutating func holdSave(_ result: SaveResult, id: RequestID) {
    let offset = draft.count
    Self.appendReply(result, id: id, to: &draft)
    let written = draft.count - offset
    if !result.receipt.duplicate { heldPerKind[Int(result.kind.rawValue)] &+= 1 }
    holes.append(
      Hole(
        offset: offset, id: id,
        reply: .save(written: written, kind: result.kind, counted: !result.receipt.duplicate, seq: result.receipt.seq)))
    writtenHoles += 1
  }

  /// Marks the place of a reply that is written once its commit's outcome is known.
  mutating func hold(_ result: any JSONEncodable, id: RequestID) {
    holes.append(Hole(offset: draft.count, id: id, reply: .other(result)))
  }

  /// Appends an error reply (no line end).
  mutating func appendError(_ error: RPCError, id: RequestID) {
    ResponseWriter.append(Response(id: id, .error(error)), to: &draft)
    ledger.rendered += 1
  }

  /// An error reply on a line of its own, to a request that needed one.
  mutating func writeError(_ error: RPCError, id: RequestID) {
    ledger.requested += 1
    appendError(error, id: id)
    draft.append(UInt8(ascii: "\n"))
  }

  /// Moves the replies and progress notifications of long calls into the draft.
  mutating func takeLongCallOutput(_ longCalls: LongCalls) {
    guard !longCalls.output.isEmpty || longCalls.replies > 0 else { return }
    let taken = longCalls.takeOutput()
    draft.append(contentsOf: taken.bytes)
    ledger.late += taken.replies
  }

  // MARK: - Commit and render

  /// Commits the journal records gathered since the last commit and settles the waiting replies.
  /// Returns the refusal they get when the write failed.
  @discardableResult
  mutating func commit(_ service: Service) -> RPCError? {
    guard let failure = service.store.commit() else {
      settle(nil)
      return nil
    }
    service.log.error("journal write failed (\(failure)); the burst's saves were not acknowledged")
    let refusal = StoreError.storageUnavailable(failure.description).rpcError
    settle(refusal)
    return refusal
  }

  private mutating func settle(_ refusal: RPCError?) {
    if let refusal, settlement.settled < holes.count {
      settlement.refused.append((settlement.settled..<holes.count, refusal))
    }
    settlement.settled = holes.count
  }

  /// Commits, then writes the burst's replies into `output`. Call only between lines.
  mutating func render(_ service: Service) {
    commit(service)
    takeLongCallOutput(service.longCalls)
    renderSettled(service)
  }

  // MARK: - Handing over a burst while its records are written

  /// True when every reply the burst waits for is a save's, written: it can be handed over.
  var holdsOnlySaves: Bool {
    writtenHoles == holes.count && settlement.settled == 0 && ledger.deferred == 0 && ledger.late == 0
  }

  /// True while a burst handed over waits for its write (`renderHandedOver`).
  var hasHandedOver: Bool { handedOver?.isWaiting ?? false }

  /// Hands the burst's replies (draft, holes, and their requests) over while its records are being
  /// written (`Store.beginCommit`), and starts empty; `output` stays. Only when `holdsOnlySaves`
  /// and nothing is handed over.
  mutating func handOver() {
    let flight = handedOver ?? HandedOver()
    handedOver = flight
    swap(&draft, &flight.burst.draft)
    swap(&holes, &flight.burst.holes)
    swap(&writtenHoles, &flight.burst.writtenHoles)
    swap(&heldPerKind, &flight.burst.heldPerKind)
    (flight.burst.ledger.requested, flight.burst.ledger.rendered) = (ledger.requested, ledger.rendered)
    (ledger.requested, ledger.rendered) = (0, 0)
    flight.isWaiting = true
  }

  /// Once the handed-over burst's write landed (waiting for it), renders its replies into `output`,
  /// ahead of anything this burst renders.
  mutating func renderHandedOver(_ service: Service) {
    guard let flight = handedOver, flight.isWaiting else { return }
    flight.isWaiting = false
    flight.burst.renderWritten(service.store.takeWritten() ?? nil, service)
    takeOutput(of: &flight.burst)
  }

  /// A burst handed over, kept (its buffers too) for the next.
  private final class HandedOver {
    var burst = Burst()
    var isWaiting = false
  }

  /// Renders a handed-over burst once its write landed (`failure`: it failed) into `output`. Its
  /// holes are all saves, refused by seq (`refusal(of:)`): the failure is only logged here.
  private mutating func renderWritten(_ failure: FileError?, _ service: Service) {
    if let failure {
      service.log.error(
        "journal write failed, written off the loop's thread (\(failure)); the burst's saves were not acknowledged")
    }
    renderSettled(service, handedOver: true)
  }

  /// Writes the settled replies into `output` and starts the next burst.
  /// `handedOver`: no long call's request or reply is in it (`holdsOnlySaves`).
  private mutating func renderSettled(_ service: Service, handedOver: Bool = false) {
    if output.isEmpty, settlement.refused.isEmpty, writtenHoles == holes.count, !service.store.hasRefusedSaves {
      // Every reply of the burst is in `draft` as it stands: it becomes the output as it is.
      countSaves(service)
      swap(&output, &draft)
    } else {
      renderHoles(service)
    }
    ledger.rendered += holes.count
    ledger.check(service.log, awaitingLongReplies: handedOver ? 0 : service.longCalls.awaitingReply)
    holes.removeAll(keepingCapacity: true)
    writtenHoles = 0
    heldPerKind = SIMD4<Int>()
    settlement = Settlement()
    draft.removeAll(keepingCapacity: draft.capacity <= 1 << 22)
  }

  /// Writes `draft` into `output` with each hole filled: a save's reply as written, or its refusal;
  /// another result as it renders.
  private mutating func renderHoles(_ service: Service) {
    output.reserveCapacity(output.count + draft.count + (holes.count - writtenHoles) * 112)
    let draft = self.draft
    draft.withUnsafeBufferPointer { draft in
      // `draft[cursor..<n]` is ready to go out as it is: the text between holes and the saves'
      // replies that stand.
      var cursor = 0
      for n in holes.indices {
        let offset = holes[n].offset
        if case .save(_, let kind, let counted, _) = holes[n].reply, refusal(of: n, service) == nil {
          if counted { service.counters.countSave(kind) }
          continue
        }
        if offset > cursor { output.appendBytes(UnsafeBufferPointer(rebasing: draft[cursor..<offset])) }
        cursor = offset
        if case .save(let written, _, _, _) = holes[n].reply { cursor += written }
        renderHole(n, service)
      }
      if draft.count > cursor { output.appendBytes(UnsafeBufferPointer(rebasing: draft[cursor...])) }
    }
  }

  /// Appends the refusal hole `n`'s commit gave it, or the reply of a result that is not a save's.
  private mutating func renderHole(_ n: Int, _ service: Service) {
    if let refusal = refusal(of: n, service) {
      if case .save = holes[n].reply { service.counters.countRefusal(MetricCounters.reason(refusal.code.rawValue)) }
      ResponseWriter.append(Response(id: holes[n].id, .error(refusal)), to: &output)
    } else if case .other(let result) = holes[n].reply {
      ResponseWriter.append(Response(id: holes[n].id, .result(result)), to: &output)
    }
  }

  /// The refusal hole `n` gets. A save's is decided by its seq alone: refused exactly when a failed
  /// write took it back (another commit, delivery's say, may have written it before the commit that
  /// settles this hole failed). Another result gets the refusal of the commit that settled it.
  private func refusal(of n: Int, _ service: Service) -> RPCError? {
    guard case .save(_, _, _, let seq) = holes[n].reply else { return settlement.refusal(of: n) }
    guard service.store.isRefused(seq) else { return nil }
    return StoreError.storageUnavailable(service.store.lastCommitError ?? "journal write failed").rpcError
  }

  /// Counts the burst's saves for `/metrics` (all of them stand), as tallied while they were held.
  private func countSaves(_ service: Service) {
    for kind in ItemKind.allCases where heldPerKind[Int(kind.rawValue)] > 0 {
      service.counters.countSaves(kind, heldPerKind[Int(kind.rawValue)])
    }
  }

  /// Writes a save's reply: in one pass through the writer's cursor form in the common case (an
  /// integer request id, a generated item id, no warnings), else as any other result.
  static func appendReply(_ result: SaveResult, id: RequestID, to out: inout [UInt8]) {
    guard case .int(let number) = id, number >= 0, result.receipt.id.client.isEmpty, !result.receipt.duplicate,
      result.warnings.isEmpty
    else {
      return ResponseWriter.append(Response(id: id, .result(result)), to: &out)
    }
    let receipt = result.receipt
    ResponseWriter.appendResult(id: UInt64(number), capacity: 112, to: &out) { cursor in
      cursor.put("{\"id\":\"")
      IDGenerator.writeText(high: receipt.id.high, low: receipt.id.low, to: cursor.p)
      cursor.advance(by: IDGenerator.length)
      cursor.put("\",\"seq\":")
      cursor.put(decimal: receipt.seq)
      cursor.put(",\"pending\":")
      cursor.put(decimal: UInt64(receipt.pending))
      cursor.put(UInt8(ascii: "}"))
    }
  }

  /// A reply that waits for the commit of its journal record: a save's, already written into
  /// `draft` at `offset` (its `written` bytes, without the line end), or another result, written
  /// there by `render`. A failed commit puts the refusal in its place.
  private struct Hole {
    var offset: Int
    var id: RequestID
    var reply: Waiting

    enum Waiting {
      /// A save's reply: `written` bytes at the offset; `counted` when `/metrics` counts it; `seq`
      /// the item's (the original's, for a repeated client id).
      case save(written: Int, kind: ItemKind, counted: Bool, seq: UInt64)
      case other(any JSONEncodable)
    }
  }

  /// What the commits of a burst decided for its holes: the first `settled` are settled, and those in
  /// a refused range get that refusal instead of their reply (a failed write refuses every hole it
  /// settles; a success needs no record).
  private struct Settlement {
    var settled = 0
    var refused: [(holes: Range<Int>, refusal: RPCError)] = []

    func refusal(of hole: Int) -> RPCError? {
      refused.isEmpty ? nil : refused.first { $0.holes.contains(hole) }?.refusal
    }
  }
}

/// Counts requests that need a reply and replies written, per burst: they must match, as
/// sourcekit-lsp's `RequestAndReply` asserts one reply per request. A long call's request is
/// `deferred` in its burst and its reply is `late` in a later one (or the same): the calls deferred
/// and not yet answered must be exactly the long calls still waiting for their reply.
struct ReplyLedger {
  var requested = 0
  var rendered = 0
  var deferred = 0
  var late = 0
  private var outstanding = 0

  mutating func check(_ log: Log, awaitingLongReplies: Int) {
    outstanding += deferred - late
    if requested != rendered + deferred || outstanding != awaitingLongReplies {
      log.error(
        "internal: \(requested) requests needed a reply but \(rendered) replies were written and \(deferred)"
          + " long calls deferred; \(outstanding) deferred unanswered, \(awaitingLongReplies) long calls waiting")
      assertionFailure("one request, one reply: \(requested) requests, \(rendered) replies")
    }
    (requested, rendered, deferred, late) = (0, 0, 0, 0)
  }
}
