package import OutboxServer
import OutboxStore
import OutboxSupport

/// `push-outbox flush [--format items|usersTrack] [--max N] [--default-user JSON] [--lease MS] [FLAGS]`:
/// a one-shot for people who send with their own tools. It writes one line per item (`items`) or
/// one `POST /users/track` body per line (`usersTrack`, cut by the same rule as delivery) to
/// stdout, then exits.
///
/// Nothing leaves the store before its line is written: each round picks up to 10,000 items, writes
/// their lines, and only then removes exactly those items (journaled and committed). A write that
/// fails (a closed pipe) removes nothing; a kill between a write and its removal writes those lines
/// again next time (at least once). Leased items are not touched. With `--lease MS` one lease of at
/// most `--max` items (default 10,000) is taken through `flushPending` instead, and its `flushId` is
/// printed on stderr as a line `flushId <ID>` (and in the summary): ack it later with `push-outbox ack`
/// (or `ackFlush`), release it with `push-outbox release`, or let it expire and the items come back.
///
/// Exit codes: 0 done; 1 the store failed or stdout closed early (nothing lost); 2 usage.
package enum FlushCommand {
  static let roundSize = 10_000

  /// The flush's own flags, rows of the option table (`--format`, `--lease`, `--default-user`, `--max`).
  package struct Options: Sendable, Equatable {
    static let formats = ["\(FlushPending.formats.items)", "\(FlushPending.formats.usersTrack)"]
    var format = Options.formats[0]
    var usersTrack: Bool { format == Options.formats[1] }
    var max: Int?
    var defaultUser: String?
    var leaseMs: Int?
  }

  /// Runs the one-shot and returns the exit code.
  package static func run(_ options: Options, _ config: Configuration) -> ExitCode {
    // A closed stdout releases the round (SIGPIPE is ignored); a stopping signal ends a blocked write.
    let wakeup = Signals.install()
    let service = Service(config: config)
    do { try service.openDisk() } catch {
      Log.stderr("push-outbox flush: \(error.message)")
      return error.exit
    }
    defer { service.finish() }
    var session = FlushSession(
      options: options, caller: InProcessCaller(server: Server(service: service)), wakeup: wakeup)
    let code = session.run()
    // A line of its own for scripts: `flush_id=$(sed -n 's/^flushId //p' flush.log)`, then `push-outbox ack`.
    if let kept = session.kept { Log.stderr("flushId \(kept.flushId)") }
    Log.stderr("push-outbox flush: " + session.summary)
    return code
  }
}
