import PushOutbox

// The executable: parse the command line, open the store, serve stdin until it ends.
let environment: (String) -> String? = { name in getenv(name).map { String(cString: $0) } }

let command: Command
do {
  command = try Configuration.parse(Array(CommandLine.arguments.dropFirst()), env: environment)
} catch {
  Log.stderr("push-outbox: \(error.message) (see --help)")
  exit(2)
}

switch command {
case .help:
  print(HelpText.usage)
  exit(0)
case .version:
  print("push-outbox \(HelpText.version)")
  exit(0)
case .run(let config):
  let service = Service(config: config)
  let wakeup = Signals.install()
  do {
    try service.openDisk()
  } catch {
    Log.stderr("push-outbox: \(error.message)")
    if let rpcError = error.rpcError { print(Server.startupFailureLine(rpcError)) }
    exit(error.exitCode)
  }
  var loop = RunLoop(server: Server(service: service), transport: StdioTransport(wakeup: wakeup))
  _ = loop.run()
  exit(0)
}
