import OutboxFleet
import OutboxJSONRPC
import OutboxNATS
import OutboxServer
import OutboxStore
import OutboxSupport
import OutboxTransport

/// The executable's body: secure the standard descriptors, parse the command line once into an
/// `Invocation`, run it, exit. Every start-up failure of the service is one line on stderr AND one
/// JSON-RPC error line with `id: null` on stdout (`fail`); a subcommand's usage error is one stderr line.
@MainActor
package enum PushOutbox {
  package static func main(arguments: [String]) -> Never {
    // First of all, before anything opens a file or a pipe: a closed fd 0, 1 or 2 becomes /dev/null,
    // so the store's LOCK or the signal pipe can never land on a standard descriptor.
    let standard = StandardDescriptors.secure()
    let environment: (String) -> String? = { name in getenv(name).map { String(cString: $0) } }
    if environment("PUSH_OUTBOX_LOG_FORMAT") == "json" { Log.format = .json }
    let invocation: Invocation
    do { invocation = try Invocation.parse(arguments, env: environment) } catch {
      guard let command = arguments.first.flatMap(Subcommand.init(rawValue:)) else {
        fail("\(error.message) (see --help)", .startupFailed("usage", error.message), .usage)
      }
      Log.stderr("push-outbox \(command): \(error.message) (see --help)")
      exit(ExitCode.usage.rawValue)
    }
    // --log-format and --log-level apply to every subcommand (the level through the Service's log).
    if let config = invocation.configuration { Log.format = config.logFormat }
    exit(run(invocation, standard, environment).rawValue)
  }

  private static func run(
    _ invocation: Invocation, _ standard: StandardDescriptors, _ environment: (String) -> String?
  ) -> ExitCode {
    switch invocation {
    case .help(let command):
      printInfo(
        "help text", standard, HelpText.usage(command, defaultStore: Configuration.defaultStorePath(env: environment)))
    case .version: printInfo("version", standard, "push-outbox \(HelpText.version)")
    case .manPage: printInfo("man page", standard, CommandLineDocs.manPage(), terminator: "")
    case .completion(let shell):
      printInfo("completion script", standard, CommandLineDocs.completion(shell), terminator: "")
    case .serve(let config, let relay, let fleet): serve(config, relay: relay, fleet: fleet, standard, environment)
    case .deliver(let config): return DeliverCommand.run(config)
    case .deliverFrom(let config, let options): return FleetDeliverCommand.run(options, config, env: environment)
    case .flush(let config, let options):
      refuseClosedStdout("push-outbox flush", "the flushed items", standard)
      return FlushCommand.run(options, config)
    case .import(let config, let file, let user): return ImportCommand.run(config, file: file, user: user)
    case .verify(let config): return VerifyCommand.run(config)
    case .dump(let config, let options):
      refuseClosedStdout("push-outbox dump", "the items", standard)
      return DumpCommand.run(options, config)
    case .endLease(let config, let action, let flushId): return LeaseCommand.run(action, flushId: flushId, config)
    case .relay(let config, let options): return RelayCommand.run(options, config, env: environment)
    case .lsp(let config, let options): return LSPCommand.run(options, config)
    case .fakeBraze(let settings): return FakeBrazeCommand.run(settings, standard)
    }
    return .success
  }

  /// No subcommand: open the store and serve stdin until it ends.
  private static func serve(
    _ config: Configuration, relay: RelayCommand.Options?, fleet: FleetDeliverCommand.Options?,
    _ standard: StandardDescriptors,
    _ environment: (String) -> String?
  ) -> Never {
    // The replies are the server's data: a closed stdout at start would ack saves nobody sees.
    if let refusal = standard.closedStdoutRefusal("the replies") {
      fail(refusal, .startupFailed("usage", refusal), .usage)
    }
    if StandardDescriptors.stdinIsDirectory {
      let message = "stdin is a directory, not a stream of requests"
      fail(message, .startupFailed("unreadable_input", message), .failure)
    }
    let service = Service(config: config)
    let wakeup = Signals.install()
    var auth: NATSAuth?
    if relay != nil || fleet != nil {
      switch RelayCommand.credentials(relay?.credsFile ?? fleet?.credsFile, env: environment) {
      case .success(let found): auth = found
      case .failure(let error): fail(error.description, .startupFailed("usage", error.description), .usage)
      }
    }
    do { try service.openDisk() } catch { fail(error.message, error.rpcError, error.exit) }
    if let relay { service.relay = BackgroundRelay.start(relay, auth: auth) }
    if let fleet { service.fleet = BackgroundFleet.start(fleet, auth: auth, config) }
    if let address = relay?.to ?? fleet?.from {
      var settings = NATSOptions(address: address, auth: auth)
      settings.allowPlaintext = relay?.allowPlaintext ?? fleet?.allowPlaintext ?? false
      settings.name = "push-outbox dead letters"
      service.fleetDeadLetters = FleetDeadLetterStream(settings: settings, stream: relay?.stream ?? fleet!.stream)
    }
    if isatty(0) == 1 { Log.stderr(HelpText.terminalHint(store: config.effectiveStorePath)) }
    var loop = RequestLoop(server: Server(service: service), transport: StdioTransport(wakeup: wakeup))
    let reason = loop.run()
    exit(ExitCode(reason, service.lifecycle).rawValue)
  }
}
