package import OutboxDelivery
package import OutboxDomain
package import OutboxJSON
package import OutboxJSONRPC
package import OutboxServer
package import OutboxStore
package import OutboxSupport
package import OutboxTransport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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
/// printed on stderr: ack it later with `ackFlush`, or let it expire and the items come back.
///
/// Exit codes: 0 done; 1 the store failed or stdout closed early (nothing lost); 2 usage.
package enum FlushCommand {
  static let roundSize = 10_000

  package struct Options: Sendable, Equatable {
    var format = "\(FlushPending.formats.items)"
    var usersTrack: Bool { format == "\(FlushPending.formats.usersTrack)" }
    var max: Int?
    var defaultUser: String?
    var leaseMs: Int?
  }

  /// Splits the flush's own flags from the service's.
  package static func options(_ arguments: [String]) throws(UsageError) -> (Options, [String]) {
    var options = Options()
    let (values, rest) = try OwnFlags.take(["--format", "--max", "--default-user", "--lease"], from: arguments)
    for (name, value) in values { try apply(name, value, to: &options) }
    return (options, rest)
  }

  private static func apply(_ name: String, _ value: String, to options: inout Options) throws(UsageError) {
    switch name {
    case "--format":
      guard ["\(FlushPending.formats.items)", "\(FlushPending.formats.usersTrack)"].contains(value) else {
        throw UsageError("--format must be items or usersTrack, not \(value)")
      }
      options.format = value
    case "--max": options.max = try number(name, value, max: Int(Int32.max))
    case "--lease": options.leaseMs = try number(name, value, max: 3_155_760_000_000)
    default: options.defaultUser = value
    }
  }

  private static func number(_ name: String, _ value: String, max: Int) throws(UsageError) -> Int {
    guard let n = Int(value), (1...max).contains(n) else {
      throw UsageError("\(name) must be an integer in 1...\(max)")
    }
    return n
  }

  /// Runs the one-shot and returns the exit code.
  package static func run(_ options: Options, _ config: Configuration) -> Int32 {
    // A closed stdout releases the round (SIGPIPE is ignored); a stopping signal ends a blocked write.
    let wakeup = Signals.install()
    let service = Service(config: config)
    do { try service.openDisk() } catch {
      Log.stderr("push-outbox flush: \(error.message)")
      return error.exitCode
    }
    defer { service.finish() }
    var session = FlushSession(
      options: options, caller: InProcessCaller(server: Server(service: service)), wakeup: wakeup)
    let code = session.run()
    Log.stderr("push-outbox flush: " + session.summary)
    return code
  }
}
