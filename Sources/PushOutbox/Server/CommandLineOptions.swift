/// The flags, each with its environment twin (`--max-line-bytes` ↔ `PUSH_OUTBOX_MAX_LINE_BYTES`).
package struct CommandLineOption: Sendable {
  package var name: String
  package var valueName: String?  // nil for a switch
  package var help: String
  fileprivate var apply: @Sendable (inout Configuration, String) throws -> Void

  package var environmentName: String {
    "PUSH_OUTBOX_" + String(name.dropFirst(2).map { $0 == "-" ? "_" : Character($0.uppercased()) })
  }
}

extension CommandLineOption {
  fileprivate func set(_ config: inout Configuration, _ value: String) throws(UsageError) {
    do { try apply(&config, value) } catch let error as UsageError { throw error } catch {
      throw UsageError("\(name): \(error)")
    }
  }
}

extension Configuration {
  package static let options: [CommandLineOption] = [
    .init(name: "--store", valueName: "DIR", help: "store directory (default $XDG_STATE_HOME/push-outbox)") { c, v in
      c.storePath = v
    },
    .init(name: "--memory", valueName: nil, help: "keep everything in memory; write no files") { c, v in
      c.memory = try bool(v, "--memory")
    },
    .init(name: "--accept-loss", valueName: nil, help: "start even if store files are missing; report the loss") {
      c, v in
      c.acceptLoss = try bool(v, "--accept-loss")
    },
    .init(name: "--snapshot-interval", valueName: "SECONDS", help: "snapshot period when dirty (default 1)") { c, v in
      c.snapshotInterval = try number(v, "--snapshot-interval", min: 0.01)
    },
    .init(name: "--max-line-bytes", valueName: "N", help: "longest accepted line (default 16777216)") { c, v in
      c.maxLineBytes = try int(v, "--max-line-bytes", min: 64)
    },
    .init(name: "--max-depth", valueName: "N", help: "deepest JSON nesting (default 128, at most 1000)") { c, v in
      c.maxDepth = try int(v, "--max-depth", min: 2, max: 1000)
    },
    .init(name: "--max-batch", valueName: "N", help: "most requests in one batch (default 10000)") { c, v in
      c.maxBatch = try int(v, "--max-batch", min: 1)
    },
    .init(name: "--log-level", valueName: "LEVEL", help: "error, warn, info or debug (default warn)") { c, v in
      guard let level = LogLevel(name: v) else { throw UsageError("--log-level must be error, warn, info or debug") }
      c.logLevel = level
    },
    .init(name: "--strings", valueName: "POLICY", help: "over-long strings: reject or truncate (default reject)") {
      c, v in
      guard let policy = StringPolicy(rawValue: v) else { throw UsageError("--strings must be reject or truncate") }
      c.domain.strings = policy
    },
    .init(name: "--array-limit", valueName: "N", help: "longest custom attribute array (default 25)") { c, v in
      c.domain.arrayLimit = try int(v, "--array-limit", min: 1)
    },
    .init(name: "--max-properties-bytes", valueName: "N", help: "largest event properties (default 51200)") { c, v in
      c.domain.maxPropertiesBytes = try int(v, "--max-properties-bytes", min: 2)
    },
    .init(name: "--max-nested-attribute-bytes", valueName: "N", help: "largest nested custom attribute (default 102400)") {
      c, v in
      c.domain.maxNestedAttributeBytes = try int(v, "--max-nested-attribute-bytes", min: 2)
    },
    .init(name: "--track-batch-limit", valueName: "N", help: "objects per /users/track array (default 75)") { c, v in
      c.trackBatchLimit = try int(v, "--track-batch-limit", min: 1)
    },
    .init(name: "--fsync", valueName: "POLICY", help: "always, everysec or never (default everysec)") { c, v in
      guard let policy = FsyncPolicy(rawValue: v) else { throw UsageError("--fsync must be always, everysec or never") }
      c.fsync = policy
    },
    .init(name: "--max-pending", valueName: "N", help: "most items held (default unlimited)") { c, v in
      c.store.maxPending = try int(v, "--max-pending", min: 1)
    },
    .init(name: "--max-pending-bytes", valueName: "N", help: "most bytes held (default unlimited)") { c, v in
      c.store.maxPendingBytes = try int(v, "--max-pending-bytes", min: 1)
    },
    .init(name: "--max-item-bytes", valueName: "N", help: "largest single item (default unlimited)") { c, v in
      c.store.maxItemBytes = try int(v, "--max-item-bytes", min: 1)
    },
    .init(name: "--fixed-clock", valueName: "ISO8601", help: "testing: every timestamp is this instant") { c, v in
      guard let ms = ISO8601.parseDateTime(v) else { throw UsageError("--fixed-clock needs an ISO 8601 date-time") }
      c.fixedClock = ms
    },
    .init(name: "--id-seed", valueName: "N", help: "testing: make ids deterministic") { c, v in
      guard let seed = UInt64(v) else { throw UsageError("--id-seed needs a non-negative integer") }
      c.idSeed = seed
    },
  ]

  /// Reads the environment twins first, then the arguments (which win).
  package static func parse(_ arguments: [String], env: (String) -> String?) throws(UsageError) -> Command {
    var config = Configuration(storePath: defaultStorePath(env: env))
    for option in options {
      if let value = env(option.environmentName), !value.isEmpty { try option.set(&config, value) }
    }
    var rest = arguments[...]
    while let arg = rest.popFirst() {
      if arg == "--help" || arg == "-h" { return .help }
      if arg == "--version" { return .version }
      let (name, inline) = splitInline(arg)
      guard let option = options.first(where: { $0.name == name }) else { throw UsageError("unknown option \(arg)") }
      if option.valueName == nil {
        try option.set(&config, inline ?? "true")
      } else {
        guard let value = inline ?? rest.popFirst() else { throw UsageError("\(name) needs a value") }
        try option.set(&config, value)
      }
    }
    if !config.memory && config.storePath == nil {
      throw UsageError("no store directory: set --store, $XDG_STATE_HOME or $HOME, or pass --memory")
    }
    return .run(config)
  }

  private static func splitInline(_ arg: String) -> (String, String?) {
    guard arg.hasPrefix("--"), let eq = arg.firstIndex(of: "=") else { return (arg, nil) }
    return (String(arg[..<eq]), String(arg[arg.index(after: eq)...]))
  }

  private static func int(_ v: String, _ flag: String, min: Int, max: Int = .max) throws(UsageError) -> Int {
    guard let n = Int(v), n >= min, n <= max else {
      throw UsageError("\(flag) needs a whole number from \(min)" + (max == .max ? " up" : " to \(max)"))
    }
    return n
  }

  private static func number(_ v: String, _ flag: String, min: Double) throws(UsageError) -> Double {
    guard let n = Double(v), n.isFinite, n >= min else { throw UsageError("\(flag) needs a number of at least \(min)") }
    return n
  }

  private static func bool(_ v: String, _ flag: String) throws(UsageError) -> Bool {
    switch v {
    case "true", "1", "yes": return true
    case "false", "0", "no": return false
    default: throw UsageError("\(flag) takes no value (or true/false in its environment variable)")
    }
  }
}
