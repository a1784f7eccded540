package import OutboxDomain
package import OutboxJSON
package import OutboxStore
package import OutboxSupport

extension Deliverer {
  /// Applies one answer to the store (on the loop thread).
  func apply(_ completion: Completion) {
    guard let flight = flights.removeValue(forKey: completion.flushId) else { return }
    busyUsers.subtract(flight.users)
    pacing.answered(flight.pacingToken, at: completion.answeredAt)
    var batch = completion.batch
    batch.seqs = flight.seqs  // the lease's items, whatever the body carried
    let verdict = Verdict.of(completion.result, batch, nowMs: clock.now(), key: settings.apiKey)
    switch verdict {
    case .delivered(let dead):
      let delivered = batch.seqs.filter { dead[$0] == nil }
      store.settle(
        completion.flushId, delivered: delivered, dead: dead.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
      stats.delivered += delivered.count
      stats.deadLettered += dead.count
      stats.retrying.subtract(batch.seqs)
      for seq in batch.seqs { userOfSeq[seq] = nil }
      failures = 0
      stats.configError = nil
    case .retry(let afterMs, let reason):
      store.settle(completion.flushId, delivered: [], dead: [])
      stats.retrying.formUnion(batch.seqs)
      fail(reason: reason, afterMs: afterMs)
    case .split(let reason):
      split(completion.flushId, batch, reason: reason)
    case .stop(let reason):
      store.settle(completion.flushId, delivered: [], dead: [])
      stats.retrying.formUnion(batch.seqs)
      stats.configError = reason
      stats.lastError = reason
      setbacks += 1
      pausedUntil = clock.now() + Int64(settings.configErrorBackoffMs)
      log.error(
        "delivery stopped: Braze answered \(reason); check --braze-endpoint and the API key (needs users.track)."
          + " Every item is kept; trying again at \(UTCTime.format(ms: pausedUntil))")
    }
  }

  /// A 400 for the whole request: halve the batch until the bad object is alone, then dead-letter it.
  private func split(_ flushId: String, _ batch: TrackBatch, reason: String) {
    let objects = batch.attributeSeqs + batch.eventSeqs
    if objects.count <= 1 {
      let dead = objects.map { ($0, reason) }
      let rest = batch.seqs.filter { !objects.contains($0) }  // superseded values it carried
      store.settle(flushId, delivered: rest, dead: dead)
      stats.deadLettered += dead.count
      stats.retrying.subtract(batch.seqs)
      log.warn("delivery: Braze refused an object (\(reason)); it is a dead letter")
      return
    }
    store.settle(flushId, delivered: [], dead: [])
    let seqs = batch.seqs
    let half = seqs.count / 2
    splits.insert(contentsOf: [Array(seqs[..<half]), Array(seqs[half...])], at: 0)
  }
}
