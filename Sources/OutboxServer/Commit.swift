package import OutboxJSONRPC
import OutboxStore
import OutboxSupport

/// Group commit: the journal records of a burst are written (and, with `--fsync always`, flushed)
/// before any of the burst's replies. If that fails, the store takes the burst's saves back and their
/// replies become `-32003 storage_unavailable`: a save is acknowledged only once its record is written.
extension Server {
  /// A reply that waits for the commit of its journal record: a save's, already written into
  /// `draft` at `offset` (its `written` bytes, without the line end), or another result, written
  /// there by `render`. A failed commit puts the refusal in its place.
  struct Hole {
    var offset: Int
    var id: RequestID
    var reply: Waiting

    enum Waiting {
      /// A save's reply: `written` bytes at the offset; `counted` when `/metrics` counts it.
      case save(written: Int, kind: ItemKind, counted: Bool)
      case other(any AwaitsCommit)
    }
  }

  /// What the commits of a burst decided for its holes: the first `settled` are settled, and those in
  /// a refused range get that refusal instead of their reply (a failed write refuses every hole it
  /// settles; a success needs no record).
  struct Settlement {
    var settled = 0
    var refused: [(holes: Range<Int>, refusal: RPCError)] = []

    func refusal(of hole: Int) -> RPCError? {
      refused.isEmpty ? nil : refused.first { $0.holes.contains(hole) }?.refusal
    }
  }

  /// Commits the journal records gathered since the last commit and settles the waiting replies.
  /// Returns the refusal they get when the write failed.
  @discardableResult
  package func commit() -> RPCError? {
    guard let failure = service.store.commit() else {
      settle(nil)
      return nil
    }
    service.log.error("journal write failed (\(failure)); the burst's saves were not acknowledged")
    let refusal = StoreError.storageUnavailable(failure.description).rpcError
    settle(refusal)
    return refusal
  }

  private func settle(_ refusal: RPCError?) {
    if let refusal, settlement.settled < holes.count {
      settlement.refused.append((settlement.settled..<holes.count, refusal))
    }
    settlement.settled = holes.count
  }

  /// Commits, then writes the burst's replies into `output`. Call only between lines.
  package func render() {
    commit()
    takeLongCallOutput()
    if output.isEmpty, settlement.refused.isEmpty, writtenHoles == holes.count {
      // Every reply of the burst is in `draft` as it stands: it becomes the output as it is.
      countSaves()
      swap(&output, &draft)
    } else {
      renderHoles()
    }
    ledger.rendered += holes.count
    ledger.check(service.log, awaitingLongReplies: service.longCalls.awaitingReply)
    holes.removeAll(keepingCapacity: true)
    writtenHoles = 0
    settlement = Settlement()
    draft.removeAll(keepingCapacity: draft.capacity <= 1 << 22)
  }

  /// Writes `draft` into `output` with each hole filled: a save's reply as written, or its refusal;
  /// another result as it renders.
  private func renderHoles() {
    output.reserveCapacity(output.count + draft.count + (holes.count - writtenHoles) * 112)
    draft.withUnsafeBufferPointer { draft in
      // `draft[cursor..<n]` is ready to go out as it is: the text between holes and the saves'
      // replies that stand.
      var cursor = 0
      for n in holes.indices {
        let offset = holes[n].offset
        if case .save(_, let kind, let counted) = holes[n].reply, settlement.refusal(of: n) == nil {
          if counted { service.counters.countSave(kind) }
          continue
        }
        if offset > cursor { output.appendBytes(UnsafeBufferPointer(rebasing: draft[cursor..<offset])) }
        cursor = offset
        if case .save(let written, _, _) = holes[n].reply { cursor += written }
        renderHole(n)
      }
      if draft.count > cursor { output.appendBytes(UnsafeBufferPointer(rebasing: draft[cursor...])) }
    }
  }

  /// Counts the burst's saves for `/metrics` (all of them stand), tallied per kind first.
  private func countSaves() {
    var perKind = SIMD4<Int>()  // `ItemKind` raw values are 0...2
    for n in holes.indices {  // by index: a copy of each hole would retain and release its id
      if case .save(_, let kind, let counted) = holes[n].reply, counted { perKind[Int(kind.rawValue)] &+= 1 }
    }
    for kind in ItemKind.allCases where perKind[Int(kind.rawValue)] > 0 {
      service.counters.countSaves(kind, perKind[Int(kind.rawValue)])
    }
  }

  /// Writes a save's reply into `draft` now, as a hole its commit may still refuse.
  func holdSave(_ result: SaveResult, id: RequestID) {
    let offset = draft.count
    Server.appendReply(result, id: id, to: &draft)
    let written = draft.count - offset
    holes.append(
      Hole(
        offset: offset, id: id, reply: .save(written: written, kind: result.kind, counted: !result.receipt.duplicate)))
    writtenHoles += 1
  }
}

extension Server {
  /// Appends the refusal hole `n`'s commit gave it, or the reply of a result that is not a save's.
  private func renderHole(_ n: Int) {
    if let refusal = settlement.refusal(of: n) {
      if case .save = holes[n].reply { service.counters.countRefusal(MetricCounters.reason(refusal.code.rawValue)) }
      ResponseWriter.append(Response(id: holes[n].id, .error(refusal)), to: &output)
    } else if case .other(let result) = holes[n].reply {
      ResponseWriter.append(Response(id: holes[n].id, .result(result)), to: &output)
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
