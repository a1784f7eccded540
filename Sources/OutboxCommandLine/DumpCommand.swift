import OutboxDelivery
package import OutboxServer
import OutboxStore
import OutboxSupport

/// `push-outbox dump [--store DIR] [--dead-letters] [--format items|usersTrack]`: prints what the store
/// holds, read-only and without the lock (`StoreInspector`), one JSON line each:
///
/// - the pending items a `flushPending` would hand out now (not leased, or with the lease expired; not
///   dead letters), in seq order, in its item shape; with `--format usersTrack` its `/users/track`
///   bodies (items that name no user are left out: a flush would make them dead letters);
/// - with `--dead-letters`, each dead letter as `listDeadLetters` writes it: `{"reason":…,"item":{…}}`.
///
/// Nothing is removed or leased. Damage is reported on stderr (see `verify`) and what can be read is
/// still printed. Exit codes: 0 printed; 1 the store has problems or stdout failed; 2 usage.
package enum DumpCommand {
  package struct Options: Sendable, Equatable {
    var format = FlushCommand.Options.formats[0]
    var deadLetters = false
  }

  package static func run(_ options: Options, _ config: Configuration) -> ExitCode {
    guard let directory = config.effectiveStorePath else {
      Log.stderr("push-outbox dump: needs a store directory (--store DIR), not --memory")
      return .usage
    }
    let inspection = StoreInspector.inspect(directory: directory)
    let store = inspection.items
    let rows: [Int]
    if options.deadLetters {
      rows = store.deadRows(max: Int.max)
    } else {
      let leased = inspection.leasedSeqs(now: (config.fixedClock.map(Clock.fixed) ?? .system).now())
      rows = store.table.rows.filter {
        !store.has(.removed, row: $0) && !store.has(.dead, row: $0) && !leased.contains(store.seq(row: $0))
      }
    }
    var out: [UInt8] = []
    do {
      if options.deadLetters {
        for row in rows {
          let item = store.item(row: row)
          out.appendASCII("{\"reason\":")
          out.appendJSONString(store.deadReasons[item.seq] ?? "unknown")
          out.appendASCII(",\"item\":")
          item.encodeJSON(into: &out)
          out.appendASCII("}\n")
          try flushIfFull(&out)
        }
      } else if options.format == FlushCommand.Options.formats[1] {
        let items = rows.filter { store.has(.hasUser, row: $0) }.map(store.item(row:))
        let requests = UsersTrack.requests(
          items, superseded: items.supersededSeqs, defaultUser: nil, limit: config.trackBatchLimit,
          mode: config.trackBatchMode)
        for request in requests {
          out.append(contentsOf: request)
          out.append(UInt8(ascii: "\n"))
          try flushIfFull(&out)
        }
      } else {
        try items(rows, store, into: &out)
      }
      try PushOutbox.writeStdoutOrThrow(out)
    } catch {
      Log.stderr("push-outbox dump: cannot write: \(error)")
      return .failure
    }
    for problem in inspection.problems {
      Log.stderr("push-outbox dump: \(problem.file)\(problem.offset.map { " at byte \($0)" } ?? ""): \(problem.reason)")
    }
    return inspection.ok ? .success : .failure
  }

  /// The items, with `superseded` marked as `flushPending` marks it (over the whole dump).
  private static func items(_ rows: [Int], _ store: HeldItems, into out: inout [UInt8]) throws(FileError) {
    let superseded = rows.count < 2 ? [] : rows.map(store.item(row:)).supersededSeqs
    var savedAtText = UTCTimeText()
    for row in rows {
      store.item(row: row).encodeJSON(
        into: &out, superseded: superseded.contains(store.seq(row: row)), savedAtText: &savedAtText)
      out.append(UInt8(ascii: "\n"))
      try flushIfFull(&out)
    }
  }

  private static func flushIfFull(_ out: inout [UInt8]) throws(FileError) {
    guard out.count >= 1 << 20 else { return }
    try PushOutbox.writeStdoutOrThrow(out)
    out.removeAll(keepingCapacity: true)
  }
}
