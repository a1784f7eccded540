import OutboxCommandLine
import OutboxJSONRPC
import OutboxServer
import OutboxSupport
import OutboxTransport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The executable: parse the command line, open the store, serve stdin until it ends.
// Every start-up failure is one line on stderr AND one JSON-RPC error line with `id: null` on stdout.

// First of all, before anything opens a file or a pipe: a closed fd 0, 1 or 2 becomes /dev/null, so
// the store's LOCK or the signal pipe can never land on a standard descriptor.
let standard = StandardDescriptors.secure()

let environment: (String) -> String? = { name in getenv(name).map { String(cString: $0) } }
if environment("PUSH_OUTBOX_LOG_FORMAT") == "json" { Log.format = .json }

/// `--help`, `--version`, `--generate-man`, `--generate-completion`: printed, then exit 0.
@MainActor func printInfo(_ command: Command) -> Never {
  refuseClosedStdout("push-outbox", "the \(infoName(command))")
  switch command {
  case .help: print(HelpText.usage(defaultStore: Configuration.defaultStorePath(env: environment)))
  case .version: print("push-outbox \(HelpText.version)")
  case .manPage: print(CommandLineDocs.manPage(), terminator: "")
  case .completion(let shell): print(CommandLineDocs.completion(shell), terminator: "")
  case .run: break
  }
  exit(0)
}

func infoName(_ command: Command) -> String {
  switch command {
  case .help: "help text"
  case .version: "version"
  case .manPage: "man page"
  case .completion: "completion script"
  case .run: "output"
  }
}

/// A command whose `output` is its data exits 2 (usage) when stdout was closed at start: nothing is
/// read, drained or acked.
@MainActor func refuseClosedStdout(_ who: String, _ output: String) {
  guard let refusal = standard.closedStdoutRefusal(output) else { return }
  Log.stderr("\(who): \(refusal)")
  exit(2)
}

func fail(_ message: String, _ rpcError: RPCError, exitCode: Int32) -> Never {
  Log.stderr("push-outbox: \(message)")
  print(ResponseWriter.line(Response(id: .null, .error(rpcError))))
  exit(exitCode)
}

// `push-outbox deliver [FLAGS]`: deliver to Braze once and exit (see DeliverCommand).
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "deliver" {
  do {
    let command = try Configuration.parse(Array(CommandLine.arguments.dropFirst(2)), env: environment)
    guard case .run(let config) = command else { printInfo(command) }
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
    let command = try Configuration.parse(rest, env: environment)
    guard case .run(let config) = command else { printInfo(command) }
    refuseClosedStdout("push-outbox flush", "the flushed items")
    exit(FlushCommand.run(options, config))
  } catch {
    Log.stderr("push-outbox flush: \(error.message) (see --help)")
    exit(2)
  }
}

// `push-outbox import [FLAGS] FILE`: import the guide's App Group storage and exit (see ImportCommand).
if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "import" {
  do {
    switch try ImportCommand.parse(Array(CommandLine.arguments.dropFirst(2)), env: environment) {
    case .run(let config, let file, let user):
      Log.format = config.logFormat
      exit(ImportCommand.run(config, file: file, user: user))
    case .info(let command): printInfo(command)
    }
  } catch {
    Log.stderr("push-outbox import: \(error.message) (see --help)")
    exit(2)
  }
}

let command: Command
do {
  command = try Configuration.parse(Array(CommandLine.arguments.dropFirst()), env: environment)
} catch {
  fail("\(error.message) (see --help)", .startupFailed("usage", error.message), exitCode: 2)
}

switch command {
case .help, .version, .manPage, .completion:
  printInfo(command)
case .run(let config):
  Log.format = config.logFormat
  // The replies are the server's data: a closed stdout at start would ack saves nobody sees.
  if let refusal = standard.closedStdoutRefusal("the replies") {
    fail(refusal, .startupFailed("usage", refusal), exitCode: 2)
  }
  if StandardDescriptors.stdinIsDirectory {
    let message = "stdin is a directory, not a stream of requests"
    fail(message, .startupFailed("unreadable_input", message), exitCode: 1)
  }
  let service = Service(config: config)
  let wakeup = Signals.install()
  do {
    try service.openDisk()
  } catch {
    fail(error.message, error.rpcError, exitCode: error.exitCode)
  }
  if isatty(0) == 1 { Log.stderr(HelpText.terminalHint(store: config.effectiveStorePath)) }
  var loop = RequestLoop(server: Server(service: service), transport: StdioTransport(wakeup: wakeup))
  _ = loop.run()
  exit(0)
}
