import OutboxServer

/// The `--help` text, built from the option table so it never drifts from the parser.
package enum HelpText {
  package static var version: String { embeddedVersion }

  package static let summary = "a pending-analytics outbox for Braze push data, speaking line-delimited JSON-RPC 2.0"

  /// Exit codes, for `--help` and the man page: the `ExitCode` table.
  static var exitCodes: [(code: Int32, meaning: String)] { ExitCode.allCases.map { ($0.rawValue, $0.meaning) } }

  /// `push-outbox --help`, or a subcommand's own (`push-outbox flush --help`). `defaultStore` is the
  /// directory this run would use without `--store` (nil when there is none).
  static func usage(_ command: Subcommand? = nil, defaultStore: String?) -> String {
    var lines: [String]
    if let command {
      lines = ["USAGE: push-outbox \(command.rawValue) \(command.arguments)", "", command.help + "."]
      let own = Configuration.options.filter { $0.command == command }
      if !own.isEmpty { lines += ["", "OPTIONS OF \(command.rawValue.uppercased()):"] + rows(own, defaultStore) }
      let used = Configuration.options.filter { $0.command == nil && command.serviceOptions.contains($0.name) }
      lines += ["", "SERVICE OPTIONS IT USES (each also read from its environment variable, e.g. PUSH_OUTBOX_STORE):"]
      lines += rows(used, defaultStore)
    } else {
      lines = [
        "push-outbox \(version): \(summary)", "on stdin/stdout (one request per line, one response per line).", "",
        "USAGE: push-outbox [options]",
      ]
      for command in Subcommand.allCases {
        lines.append("       push-outbox \(command.rawValue) \(command.arguments)".padding(to: 42) + command.help)
        lines += rows(Configuration.options.filter { $0.command == command }, defaultStore).map { "    " + $0 }
      }
      lines += ["", "OPTIONS (each also read from its environment variable, e.g. PUSH_OUTBOX_STORE):"]
      lines += rows(Configuration.options.filter { $0.command == nil }, defaultStore)
    }
    for info in Configuration.infoOptions {
      lines.append("  " + "\(info.short), \(info.name)".padding(to: 32) + info.help)
    }
    lines += ["", "EXIT CODES:"]
    lines += exitCodes.map { "  \($0.code)  \($0.meaning)" }
    guard command == nil else { return lines.joined(separator: "\n") }
    lines += [
      "",
      "EXAMPLE:",
      #"  echo '{"jsonrpc":"2.0","id":1,"method":"saveCustomEvent","params":{"name":"push_opened"}}' \"#,
      "    | push-outbox --memory",
      "",
      "Stdout carries only JSON-RPC responses; logs go to stderr. Methods: see Protocol/openrpc.json.",
    ]
    return lines.joined(separator: "\n")
  }

  private static func rows(_ options: [CommandLineOption], _ defaultStore: String?) -> [String] {
    options.map { option in
      let flag = option.name + (option.valueName.map { " " + $0 } ?? "")
      return "  " + flag.padding(to: 32) + optionHelp(option, defaultStore: defaultStore)
    }
  }

  /// The option's help, with the store default spelled out.
  static func optionHelp(_ option: CommandLineOption, defaultStore: String?) -> String {
    guard option.name == "--store" else { return option.help }
    let rule = "\(option.help) (default \(Configuration.defaultStoreRule))"
    return defaultStore.map { rule + "; here: \($0)" } ?? rule
  }

  /// The one stderr line when stdin is a terminal, so a person knows what the silence means.
  static func terminalHint(store: String?) -> String {
    "push-outbox: reading JSON-RPC 2.0 requests, one per line, from stdin; store: "
      + (store ?? "memory") + ". Ctrl-D ends; --help for more."
  }
}

extension String {
  fileprivate func padding(to width: Int) -> String {
    count >= width ? self + " " : self + String(repeating: " ", count: width - count)
  }
}
