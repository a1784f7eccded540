import OutboxJSON
import OutboxJSONRPC
package import OutboxServer
import OutboxStore
import OutboxSupport

/// `push-outbox ack FLUSHID` and `push-outbox release FLUSHID`: end a `flush --lease` lease by the
/// flushId it printed, through the wire methods `ackFlush` and `releaseFlush` run in process
/// (`InProcessCaller`), so the rules are the server's own. `ack` removes the leased items; `release`
/// makes them pending again.
///
/// Exit codes: 0 done (an ack repeated after success acks 0 and is still 0); 1 the lease is unknown
/// or expired (stderr says which), or the store failed; 2 usage; 3 the store is locked.
package enum LeaseCommand {
  package enum Action: String, Sendable {
    case ack, release

    var method: String { self == .ack ? AckFlush.name : ReleaseFlush.name }
  }

  package static func run(_ action: Action, flushId: String, _ config: Configuration) -> ExitCode {
    let name = "push-outbox \(action.rawValue)"
    _ = Signals.install()
    let service = Service(config: config)
    do { try service.openDisk() } catch {
      Log.stderr("\(name): \(error.message)")
      return error.exit
    }
    defer { service.finish() }
    // A lease that ran out before this start is gone by now: say "expired", not just "unknown".
    let expired = service.store.leases.contains { $0.flushId == flushId && $0.expiresAt <= service.clock.now() }
    var caller = InProcessCaller(server: Server(service: service))
    switch caller.call(action.method, [JSONMember("flushId", .string(flushId))]) {
    case .success(let result):
      var text = "\(name): \(flushId)"
      if let acked = result["acked"]?.intValue { text += ": \(acked) items acked" }
      if let released = result["released"]?.intValue { text += ": \(released) items released" }
      Log.stderr(text)
      return .success
    case .failure(let failure):
      if failure.code == ErrorCode.invalidParams.rawValue && !failure.text.contains("flushId") {
        Log.stderr("\(name): \(failure.text)")
        return .usage
      }
      let why =
        expired
        ? "expired (its items are pending again)"
        : "unknown (no live lease has this flushId; it may have expired earlier)"
      Log.stderr("\(name): lease \(flushId) is \(why): \(failure.text)")
      return .failure
    }
  }
}
