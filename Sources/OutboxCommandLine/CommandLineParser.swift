import OutboxDelivery
import OutboxFleet
package import OutboxServer
import OutboxSupport

/// Reading the command line and the environment twins into an `Invocation`, in one parse.
extension Invocation {
  /// `[SUBCOMMAND] [FLAGS]`: the environment twins first, then the arguments (which win).
  package static func parse(_ arguments: [String], env: (String) -> String?) throws(UsageError) -> Invocation {
    var flags = arguments[...]
    var command: Subcommand? = nil
    if let first = flags.first, !first.hasPrefix("-") {
      guard let named = Subcommand(rawValue: first) else { throw unknownCommand(first) }
      command = named
      flags = flags.dropFirst()
    }
    var file: String? = nil
    if command?.takesOperand == true { (file, _) = try ImportCommand.split(Array(flags)) }
    let values: OptionValues
    switch try Configuration.read(Array(flags), for: command, env: env) {
    case .info(let info): return info
    case .values(let read): values = read
    }
    switch command {
    case nil:
      var config = values.config
      let fleet = try backgroundFleet(values)
      if fleet != nil { config.delivery.background = false }  // the fleet's leader delivers, not this store
      return .serve(config, relay: try backgroundRelay(values), fleet: fleet)
    case .deliver:
      if values.fleet.givenWithoutFrom { throw UsageError("--follow and --leader-lease need --from") }
      if let missing = values.config.missingDelivery { throw UsageError("needs " + missing) }
      guard let from = values.fleet.from else { return .deliver(values.config) }
      try NATSFlags.checkPlaintext(from, flag: "--from", allowed: values.nats.allowPlaintext)
      var fleet = values.fleet
      fleet.take(values.nats)
      return .deliverFrom(values.config, fleet)
    case .flush: return .flush(values.config, values.flush)
    case .import:
      guard let file else { throw UsageError("needs FILE (a path, or - for stdin)") }
      return .import(values.config, file: file, user: values.user)
    case .verify: return .verify(values.config)
    case .dump: return .dump(values.config, values.dump)
    case .relay:
      guard let to = values.relay.to else { throw UsageError("needs --to nats://HOST:PORT") }
      try NATSFlags.checkPlaintext(to, flag: "--to", allowed: values.nats.allowPlaintext)
      var relay = values.relay
      relay.take(values.nats)
      return .relay(values.config, relay)
    case .lsp: return .lsp(values.config, values.lsp)
    case .ack, .release:
      guard let file else { throw UsageError("needs FLUSHID (the flushId flush --lease printed)") }
      return .endLease(values.config, command == .ack ? .ack : .release, flushId: file)
    case .fakeBraze: return .fakeBraze(values.fake)
    }
  }

  /// `--relay nats://…` while serving: the relay's settings, nil without it.
  private static func backgroundRelay(_ values: OptionValues) throws(UsageError) -> RelayCommand.Options? {
    guard let to = values.nats.relay else {
      if values.nats.defaultUser != nil { throw UsageError("--relay-default-user needs --relay") }
      return nil
    }
    try NATSFlags.checkPlaintext(to, flag: "--relay", allowed: values.nats.allowPlaintext)
    if values.config.delivery.background && values.fleet.from == nil {
      throw UsageError("--relay and --deliver cannot be used together: items go to NATS, or to Braze from here")
    }
    var relay = RelayCommand.Options()
    relay.to = to
    relay.take(values.nats)
    relay.defaultUser = values.nats.defaultUser
    if let text = relay.defaultUser { _ = try RelayOptions.parseUser(text, flag: "--relay-default-user") }
    return relay
  }

  /// `--deliver --from nats://…` while serving: the fleet deliverer's settings, nil without `--from`.
  private static func backgroundFleet(_ values: OptionValues) throws(UsageError) -> FleetDeliverCommand.Options? {
    guard let from = values.fleet.from else {
      if values.fleet.givenWithoutFrom { throw UsageError("--leader-lease needs --from") }
      return nil
    }
    guard values.config.delivery.background else {
      throw UsageError("--from needs --deliver while serving (or use push-outbox deliver --from)")
    }
    try NATSFlags.checkPlaintext(from, flag: "--from", allowed: values.nats.allowPlaintext)
    var fleet = values.fleet
    fleet.take(values.nats)
    return fleet
  }

  private static func unknownCommand(_ word: String) -> UsageError {
    let names = Subcommand.allCases.map(\.rawValue)
    guard let best = Configuration.nearest(word, names) else {
      return UsageError("unknown command \(word); the commands are " + EnglishList.or(names))
    }
    return UsageError("unknown command \(word); did you mean \(best)?")
  }
}

extension Configuration {
  /// Where a setting came from: `--flag` on the command line or `PUSH_OUTBOX_FLAG` in the environment.
  private enum Source { case argument, environment }

  /// The settings of `command` (nil: the service), or the information command the flags ask for.
  enum Reading {
    case info(Invocation)
    case values(OptionValues)
  }

  /// The flags `command` takes, from the environment twins and then `arguments`. The import's FILE
  /// (the one argument that is not a flag or a flag's value) is skipped.
  static func read(
    _ arguments: [String], for command: Subcommand?, env: (String) -> String?
  ) throws(UsageError) -> Reading {
    var values = OptionValues(config: Configuration(storePath: defaultStorePath(env: env)))
    var given: [String: Source] = [:]
    for option in options where option.command == nil {
      guard let value = env(option.environmentName), !value.isEmpty else { continue }
      do { try option.set(&values, value) } catch {
        throw UsageError("\(option.environmentName)=\(value) \(error.message)")
      }
      if option.isGiven(value) { given[option.name] = .environment }
    }
    var rest = arguments[...]
    while let arg = rest.popFirst() {
      if let info = try information(arg, &rest, command) { return .info(info) }
      if command?.takesOperand == true && (arg == "-" || !arg.hasPrefix("-")) { continue }
      let (name, inline) = splitInline(arg)
      guard let option = options.first(where: { $0.name == name && $0.applies(to: command) }) else {
        throw unknown(arg, command)
      }
      let value: String
      if option.valueName == nil {
        value = inline ?? "true"
      } else {
        guard let v = inline ?? rest.popFirst() else {
          throw UsageError("\(name) needs a value (\(name) \(option.valueName!))")
        }
        value = v
      }
      do { try option.set(&values, value) } catch {
        throw UsageError(error.message.hasPrefix(name) ? error.message : "\(name) \(error.message)")
      }
      if option.isGiven(value) { given[name] = .argument } else { given[name] = nil }
    }
    try resolveConflicts(&values.config, given)
    try loadAPIKey(&values.config, env: env)
    if command == nil, values.config.delivery.background, let missing = values.config.missingDelivery {
      throw UsageError("--deliver needs " + missing)
    }
    if command != .fakeBraze && command != .lsp && !values.config.memory && values.config.storePath == nil {
      throw UsageError("no store directory: set --store, $XDG_STATE_HOME or $HOME, or pass --memory")
    }
    return .values(values)
  }

  /// `--help`, `--version`, `--generate-man`, `--generate-completion SHELL`; nil for any other flag.
  private static func information(
    _ arg: String, _ rest: inout ArraySlice<String>, _ command: Subcommand?
  ) throws(UsageError) -> Invocation? {
    if let info = infoOptions.first(where: { $0.name == arg || $0.short == arg }) {
      return info.name == "--help" ? .help(command) : .version
    }
    if arg == "--generate-man" { return .manPage }
    guard arg == "--generate-completion" else { return nil }
    guard let shell = rest.popFirst(), let kind = Shell(rawValue: shell) else {
      throw UsageError("--generate-completion needs bash, zsh or fish")
    }
    return .completion(kind)
  }

  /// What delivery lacks, naming where each piece is set; nil when it has an endpoint and a key.
  var missingDelivery: String? {
    var missing: [String] = []
    if delivery.endpoint == nil { missing.append("--braze-endpoint URL (or PUSH_OUTBOX_BRAZE_ENDPOINT)") }
    if delivery.apiKey == nil { missing.append("an API key (BRAZE_API_KEY, or --braze-api-key-file PATH)") }
    return missing.isEmpty ? nil : missing.joined(separator: " and ")
  }

  /// Two conflicting settings from the same place are a usage error; across places the argument wins.
  private static func resolveConflicts(_ config: inout Configuration, _ given: [String: Source]) throws(UsageError) {
    for (a, b) in conflictingOptions {
      guard let sa = given[a], let sb = given[b] else { continue }
      if sa == sb {
        let names = sa == .argument ? (a, b) : (environmentName(a), environmentName(b))
        throw UsageError("\(names.0) and \(names.1) cannot be used together")
      }
      // Only --memory/--store today: the one given as an argument wins over its environment twin.
      if sb == .argument && a == "--memory" { config.memory = false }
    }
  }

  private static func environmentName(_ flag: String) -> String {
    options.first(where: { $0.name == flag })?.environmentName ?? flag
  }

  private static func unknown(_ arg: String, _ command: Subcommand?) -> UsageError {
    let (name, _) = splitInline(arg)
    let known = options.filter { $0.applies(to: command) }.map(\.name) + infoOptions.flatMap { [$0.name, $0.short] }
    guard let best = nearest(name, known) else { return UsageError("unknown option \(arg)") }
    return UsageError("unknown option \(arg); did you mean \(best)?")
  }

  /// The word of `known` nearest to `word`, when it is near enough to be a slip.
  static func nearest(_ word: String, _ known: [String]) -> String? {
    guard let best = known.min(by: { EditDistance.between($0, word) < EditDistance.between($1, word) }),
      EditDistance.between(best, word) <= max(2, word.count / 3)
    else { return nil }
    return best
  }

  /// Levenshtein distance, for "did you mean".

  private static func splitInline(_ arg: String) -> (String, String?) {
    guard arg.hasPrefix("--"), let eq = arg.firstIndex(of: "=") else { return (arg, nil) }
    return (String(arg[..<eq]), String(arg[arg.index(after: eq)...]))
  }
  /// Braze keys are UUID-like (36 bytes); a few hundred bytes leaves room without taking a whole file.
  static let maxKeyBytes = 512

  /// The key comes from `--braze-api-key-file` or `$BRAZE_API_KEY`, never from a flag value. Its
  /// text never appears in an error.
  private static func loadAPIKey(_ config: inout Configuration, env: (String) -> String?) throws(UsageError) {
    if let path = config.apiKeyFile {
      guard FileIO.size(path) <= maxKeyBytes + 2 else {
        throw UsageError("--braze-api-key-file: \(path) is larger than a key (at most \(maxKeyBytes) bytes)")
      }
      let bytes: [UInt8]?
      do { bytes = try FileIO.read(path) } catch { throw UsageError("--braze-api-key-file: cannot read \(path)") }
      let text = String(decoding: bytes ?? [], as: UTF8.self).trimmedSpace()
      guard !text.isEmpty, text.utf8.count <= maxKeyBytes, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
        throw UsageError("--braze-api-key-file: \(path) must hold one key on one line (at most \(maxKeyBytes) bytes)")
      }
      config.delivery.apiKey = Secret(text)
    } else if let key = env("BRAZE_API_KEY"), !key.isEmpty {
      guard key.utf8.count <= maxKeyBytes, key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
        throw UsageError("BRAZE_API_KEY must be one key of at most \(maxKeyBytes) printable bytes, no spaces")
      }
      config.delivery.apiKey = Secret(key)
    }
  }
}
