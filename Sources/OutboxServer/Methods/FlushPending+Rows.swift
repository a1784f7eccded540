import OutboxDelivery
import OutboxStore
import OutboxSupport

extension FlushPending {
  /// `/users/track` bodies written from the held rows, for a drain that writes them before it
  /// removes anything (`push-outbox flush`): a custom event's object is copied from its body's parts
  /// as the store holds them (`WrittenEvents`), other items from their whole bodies.
  /// Each loaded body is read and checked once, as it is written; one the store rejects
  /// (`HeldItems.wellFormed`) is left out, and dropped as malformed at the next commit.
  /// Only user attributes are copied out first: a later one may supersede an earlier one.
  static func trackFromRows(max: Int, _ shape: Shape, _ service: Service) -> FlushResult {
    let store = service.store.items
    let pick = service.store.pickAvailable(max: max, checkedByCaller: true) {
      !needsUser(shape) || store.has(.hasUser, row: $0)
    }
    let attributes = pick.rows.filter { store.kind(row: $0) == .userAttribute }.map(store.item(row:))
    var result = FlushResult(
      flushId: service.newID(at: service.clock.now()), items: [], seqs: [], superseded: attributes.supersededSeqs)
    var builder = trackBuilder(result, shape, service)
    var copied = attributes.makeIterator()  // in row order: written from these copies, not read again
    let events = WrittenEvents(rows: pick.rows, store: store, threads: service.config.threads)
    events.forEachObject { index, event in
      let row = pick.rows[index]
      let seq = store.seq(row: row)
      if let event {
        builder.add(seq: seq, event: event)
        result.seqs.append(seq)
        return
      }
      let copy = store.kind(row: row) == .userAttribute ? copied.next() : nil
      if add(row, copy, store, &builder) { result.seqs.append(seq) } else { result.dropped += 1 }
    }
    result.requests = builder.finish().filter { $0.objectCount > 0 }
    result.skipped = pick.noIdentifier.map { store.id(row: $0).text }
    result.remaining = unleased(service) - pick.rows.count
    return result
  }

  /// Adds the row's object from the whole item (`copy`, when it was copied out already); false when
  /// the store rejects its body (nothing was added).
  private static func add(
    _ row: Int, _ copy: PendingItem?, _ store: HeldItems, _ builder: inout UsersTrack.Builder
  ) -> Bool {
    builder.add(copy ?? store.item(row: row), verify: { store.wellFormed(row) })
  }
}
