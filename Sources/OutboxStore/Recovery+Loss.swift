import OutboxJSON
import OutboxSupport

/// Recovery refuses to hide a loss: what was loaded is compared with what the checkpoint says was
/// held. The oldest held seq must lie in a segment on disk, each listed segment must hold at least
/// the rows the checkpoint counted for it, and the pending rows it covers, plus those that left by a
/// record written after it, must reach its item count. A shortfall refuses the start unless
/// `acceptLoss`, which reports `recoveredWithLoss` with the counts and seq ranges. (Release builds from
/// store engine v2 (8f0e18a) to fabe680 wrote checkpoints that count items no file holds: such a store
/// now says what it lost.)
/// Damaged and torn segments are reported where they are found and not counted twice. A checkpoint
/// counts only records that were flushed before it was written (see `Compaction.run`), so any
/// shortfall is a loss, whatever the `--fsync` policy.
extension Recovery {
  struct Loss {
    var from: UInt64
    var to: UInt64?
    /// How many items, when the count says (nil: a seq range with no file).
    var missing: Int?
    var detail: String
  }

  mutating func noteExits(_ record: SegmentReader.Record, _ count: Int) {
    guard let covers = outcome.checkpoint?.coversSeq, record.seq > covers else { return }
    exitsAfterCover += count
  }

  mutating func checkAgainstCheckpoint(_ firsts: [UInt64]) throws(StartupError) {
    guard let checkpoint = outcome.checkpoint, damagedOrCut.isEmpty else { return }
    var losses = perSegmentLosses(checkpoint)
    // A checkpoint that counts no items and lists no segment held nothing (not even dead letters,
    // whose segments it would list), whatever its firstSeq says: nothing can be missing.
    let heldSomething = checkpoint.items > 0 || !checkpoint.segments.isEmpty
    if heldSomething, checkpoint.firstSeq < checkpoint.nextSeq, firsts.first.map({ $0 > checkpoint.firstSeq }) ?? true {
      let to = (firsts.first ?? checkpoint.nextSeq) - 1
      losses.append(
        Loss(
          from: checkpoint.firstSeq, to: to, missing: nil,
          detail: "no segment holds seqs \(checkpoint.firstSeq)–\(to), where the oldest held item was"))
    }
    let table = store.items.table
    var loaded = 0
    for row in table.rows where !table.has(.removed, row) && !table.has(.dead, row) {
      if table.seqs[row] <= checkpoint.coversSeq { loaded += 1 }
    }
    if loaded + exitsAfterCover < checkpoint.items {
      let missing = checkpoint.items - loaded - exitsAfterCover
      losses.append(
        Loss(
          from: checkpoint.firstSeq, to: checkpoint.coversSeq, missing: missing,
          detail: "the checkpoint counts \(checkpoint.items) pending items; \(loaded) were loaded"))
    }
    try report(losses)
  }

  private func perSegmentLosses(_ checkpoint: Checkpoint) -> [Loss] {
    guard let held = checkpoint.held else { return [] }
    var losses: [Loss] = []
    for (n, first) in checkpoint.segments.enumerated() {
      guard let info = outcome.segments.first(where: { $0.first == first }), info.items < held[n] else { continue }
      let next = n + 1 < checkpoint.segments.count ? checkpoint.segments[n + 1] - 1 : nil
      losses.append(
        Loss(
          from: first, to: next, missing: held[n] - info.items,
          detail: "\(SegmentFormat.name(first: first)) holds \(info.items) items; the checkpoint counts \(held[n])"))
    }
    return losses
  }

  private mutating func report(_ losses: [Loss]) throws(StartupError) {
    guard !losses.isEmpty else { return }
    let message = "held items are missing: " + losses.map(\.detail).joined(separator: "; ")
    let ranges = losses.map { loss in
      JSONValue.object([
        JSONMember("fromSeq", .int(Int64(loss.from))), JSONMember("toSeq", loss.to.map { .int(Int64($0)) } ?? .null),
        JSONMember("missing", loss.missing.map { .int(Int64($0)) } ?? .null),
      ])
    }
    let first = [
      JSONMember("fromSeq", .int(Int64(losses[0].from))),
      JSONMember("toSeq", losses[0].to.map { .int(Int64($0)) } ?? .null),
    ]
    let missing = JSONMember("missing", .int(Int64(losses.reduce(0) { $0 + ($1.missing ?? 0) })))
    guard acceptLoss else {
      throw .refused(
        "missing_data", message + "; start with --accept-loss to serve what is left",
        first + [missing, JSONMember("ranges", .array(ranges))])
    }
    log.error(message + "; --accept-loss: serving what is left")
    outcome.warnings.append(
      .object(
        [JSONMember("code", .string("recoveredWithLoss")), JSONMember("message", .string(message))] + first
          + [missing, JSONMember("ranges", .array(ranges))]))
    outcome.dirty = true
  }
}
