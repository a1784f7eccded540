import PushOutbox

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The executable: parse the command line, open the store, serve stdin until it ends.
// Every start-up failure is one line on stderr AND one JSON-RPC error line with `id: null` on stdout.
let environment: (String) -> String? = { name in getenv(name).map { String(cString: $0) } }
if environment("PUSH_OUTBOX_LOG_FORMAT") == "json" { Log.format = .json }

func fail(_ message: String, _ rpcError: RPCError, exitCode: Int32) -> Never {
  Log.stderr("push-outbox: \(message)")
  print(Server.startupFailureLine(rpcError))
  exit(exitCode)
}

// `push-outbox deliver [FLAGS]`: deliver to Braze once and exit (see DeliverCommand).
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "deliver" {
  do {
    guard case .run(let config) = try Configuration.parse(Array(CommandLine.arguments.dropFirst(2)), env: environment)
    else { exit(0) }
    exit(DeliverCommand.run(config))
  } catch {
    Log.stderr("push-outbox deliver: \(error.message) (see --help)")
    exit(2)
  }
}

// `push-outbox flush [--format items|usersTrack] [--max N] [--lease MS] [FLAGS]`: the pending items (or
// /users/track bodies) on stdout, one per line, then exit (see FlushCommand).
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "flush" {
  do {
    let (options, rest) = try FlushCommand.options(Array(CommandLine.arguments.dropFirst(2)))
    guard case .run(let config) = try Configuration.parse(rest, env: environment) else { exit(0) }
    exit(FlushCommand.run(options, config))
  } catch {
    Log.stderr("push-outbox flush: \(error.message) (see --help)")
    exit(2)
  }
}

// `push-outbox import [FLAGS] FILE`: import the guide's App Group storage and exit (see ImportCommand).
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "import" {
  exit(ImportCommand.main(Array(CommandLine.arguments.dropFirst(2)), env: environment))
}

let command: Command
do {
  command = try Configuration.parse(Array(CommandLine.arguments.dropFirst()), env: environment)
} catch {
  fail("\(error.message) (see --help)", .startupFailed("usage", error.message), exitCode: 2)
}

switch command {
case .help:
  print(HelpText.usage(defaultStore: Configuration.defaultStorePath(env: environment)))
  exit(0)
case .version:
  print("push-outbox \(HelpText.version)")
  exit(0)
case .manPage:
  print(CommandLineDocs.manPage(), terminator: "")
  exit(0)
case .completion(let shell):
  print(CommandLineDocs.completion(shell), terminator: "")
  exit(0)
case .run(let config):
  Log.format = config.logFormat
  let service = Service(config: config)
  let wakeup = Signals.install()
  do {
    try service.openDisk()
  } catch {
    fail(error.message, error.rpcError ?? .startupFailed("store_unavailable", error.message), exitCode: error.exitCode)
  }
  if isatty(0) == 1 { Log.stderr(HelpText.terminalHint(store: config.effectiveStorePath)) }
  var loop = RunLoop(server: Server(service: service), transport: StdioTransport(wakeup: wakeup))
  _ = loop.run()
  exit(0)
}
