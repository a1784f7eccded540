package import OutboxDelivery
package import OutboxDomain
package import OutboxJSON
package import OutboxJSONRPC
package import OutboxServer
package import OutboxStore
package import OutboxSupport
package import OutboxTransport

/// Reading the command line and the environment twins into a `Command`.
extension Configuration {
  /// Where a setting came from: `--flag` on the command line or `PUSH_OUTBOX_FLAG` in the environment.
  private enum Source { case argument, environment }

  /// Reads the environment twins first, then the arguments (which win).
  package static func parse(_ arguments: [String], env: (String) -> String?) throws(UsageError) -> Command {
    var config = Configuration(storePath: defaultStorePath(env: env))
    var given: [String: Source] = [:]
    for option in options {
      guard let value = env(option.environmentName), !value.isEmpty else { continue }
      do { try option.set(&config, value) } catch {
        throw UsageError("\(option.environmentName)=\(value) \(error.message)")
      }
      if option.valueName != nil || config.memory { given[option.name] = .environment }
    }
    var rest = arguments[...]
    while let arg = rest.popFirst() {
      if let info = infoOptions.first(where: { $0.name == arg || $0.short == arg }) {
        return info.name == "--help" ? .help : .version
      }
      if arg == "--generate-man" { return .manPage }
      if arg == "--generate-completion" {
        guard let shell = rest.popFirst(), let kind = Shell(rawValue: shell) else {
          throw UsageError("--generate-completion needs bash, zsh or fish")
        }
        return .completion(kind)
      }
      let (name, inline) = splitInline(arg)
      guard let option = options.first(where: { $0.name == name }) else { throw unknown(arg) }
      let value: String
      if option.valueName == nil {
        value = inline ?? "true"
      } else {
        guard let v = inline ?? rest.popFirst() else {
          throw UsageError("\(name) needs a value (\(name) \(option.valueName!))")
        }
        value = v
      }
      do { try option.set(&config, value) } catch { throw UsageError("\(name) \(error.message)") }
      given[name] = .argument
    }
    try resolveConflicts(&config, given)
    try loadAPIKey(&config, env: env)
    if config.delivery.background && (config.delivery.endpoint == nil || config.delivery.apiKey == nil) {
      throw UsageError(
        "--deliver needs --braze-endpoint (or PUSH_OUTBOX_BRAZE_ENDPOINT) and an API key ($BRAZE_API_KEY or --braze-api-key-file)"
      )
    }
    if !config.memory && config.storePath == nil {
      throw UsageError("no store directory: set --store, $XDG_STATE_HOME or $HOME, or pass --memory")
    }
    return .run(config)
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

  private static func unknown(_ arg: String) -> UsageError {
    let (name, _) = splitInline(arg)
    let known = options.map(\.name) + infoOptions.flatMap { [$0.name, $0.short] }
    guard let best = known.min(by: { editDistance($0, name) < editDistance($1, name) }),
      editDistance(best, name) <= max(2, name.count / 3)
    else { return UsageError("unknown option \(arg)") }
    return UsageError("unknown option \(arg); did you mean \(best)?")
  }

  /// Levenshtein distance, for "did you mean".
  package static func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a.utf8), b = Array(b.utf8)
    var row = Array(0...b.count)
    for i in 1...max(a.count, 1) where !a.isEmpty {
      var previous = row[0]
      row[0] = i
      for j in stride(from: 1, through: b.count, by: 1) {
        let substitution = previous + (a[i - 1] == b[j - 1] ? 0 : 1)
        previous = row[j]
        row[j] = min(substitution, row[j] + 1, row[j - 1] + 1)
      }
    }
    return row[b.count]
  }

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
