import OutboxJSON
import OutboxServer
import OutboxStore
import OutboxSupport

/// `push-outbox verify [--store DIR]`: an offline integrity check. It reads every store file
/// (`StoreInspector`: read-only, no lock, nothing created or changed), checks every record's CRC, the
/// seq ranges, the checkpoint against the segments, the leases and dead letters, and prints one JSON
/// object on stdout:
///
///     {"ok":true,"store":"…","items":5,"deadLetters":0,"leases":0,"segments":1,"bytes":1234,
///      "liveTail":null,"problems":[{"file":"segment.…","offset":16,"reason":"checksum mismatch at byte 16"}]}
///
/// On a store a live push-outbox holds (LOCK names a live pid), a torn end of the newest segment is a
/// write under way: it is reported as `liveTail`, not as a problem.
///
/// Exit codes: 0 healthy; 1 something is damaged (or the store cannot be read); 2 usage.
enum VerifyCommand {
  package static func run(_ config: Configuration) -> ExitCode {
    guard let directory = config.effectiveStorePath else {
      Log.stderr("push-outbox verify: needs a store directory (--store DIR), not --memory")
      return .usage
    }
    let inspection = StoreInspector.inspect(directory: directory)
    var out: [UInt8] = []
    report(inspection, directory: directory).encodeJSON(into: &out)
    out.append(UInt8(ascii: "\n"))
    do { try PushOutbox.writeStdoutOrThrow(out) } catch {
      Log.stderr("push-outbox verify: cannot write the report: \(error)")
      return .failure
    }
    if !inspection.ok {
      Log.stderr("push-outbox verify: \(inspection.problems.count) problems in \(directory)")
      return .failure
    }
    return .success
  }

  static func report(_ inspection: StoreInspection, directory: String) -> JSONValue {
    .object([
      JSONMember("ok", .bool(inspection.ok)),
      JSONMember("store", .string(directory)),
      JSONMember("items", .int(Int64(inspection.pendingCount))),
      JSONMember("deadLetters", .int(Int64(inspection.items.deadCount))),
      JSONMember("leases", .int(Int64(inspection.leases.count))),
      JSONMember("segments", .int(Int64(inspection.segments.count))),
      JSONMember("bytes", .int(Int64(inspection.bytes))),
      JSONMember("checkpoint", .bool(inspection.checkpoint != nil)),
      JSONMember("livePid", inspection.livePid.map { .int(Int64($0)) } ?? .null),
      JSONMember("liveTail", inspection.liveTail?.json ?? .null),
      JSONMember("problems", .array(inspection.problems.map(\.json))),
    ])
  }
}
