package import OutboxDelivery
package import OutboxDomain
package import OutboxJSON
package import OutboxJSONRPC
package import OutboxServer
package import OutboxStore
package import OutboxSupport
package import OutboxTransport

/// The `--help` text, built from the option table so it never drifts from the parser.
package enum HelpText {
  package static var version: String { embeddedVersion }

  package static let summary = "a pending-analytics outbox for Braze push data, speaking line-delimited JSON-RPC 2.0"

  /// Exit codes, for `--help` and the man page (Protocol/README.md "Shutdown and exit codes").
  package static let exitCodes: [(code: Int32, meaning: String)] = [
    (0, "clean stop: end of input, SIGTERM, SIGINT, or a closed stdout"),
    (1, "start-up failure: the store cannot be created, read or recovered"),
    (2, "usage error, or a store written by a newer format"),
    (3, "the store is locked by another push-outbox"),
  ]

  /// The one-shot subcommands, for `--help`, the man page and the completions: name, arguments, help.
  package static let subcommands: [(name: String, arguments: String, help: String)] = [
    ("deliver", "[options]", "deliver to Braze once, then exit (0: nothing left retrying)"),
    (
      "import", "[--user JSON] [options] FILE",
      "import the guide's App Group storage from FILE (plutil -convert json; - for stdin), then exit (1: some rejected)"
    ),
    (
      "flush", "[options]",
      "write pending items (--format items|usersTrack, --max N, --default-user JSON, --lease MS) to stdout,"
        + " one per line; each leaves the store once written"
    ),
  ]

  /// `defaultStore` is the directory this run would use without `--store` (nil when there is none).
  package static func usage(defaultStore: String?) -> String {
    var lines = [
      "push-outbox \(version): \(summary)",
      "on stdin/stdout (one request per line, one response per line).",
      "",
      "USAGE: push-outbox [options]",
    ]
    for command in subcommands {
      lines.append("       push-outbox \(command.name) \(command.arguments)".padding(to: 42) + command.help)
    }
    lines += [
      "",
      "OPTIONS (each also read from its environment variable, e.g. PUSH_OUTBOX_STORE):",
    ]
    for option in Configuration.options {
      let flag = option.name + (option.valueName.map { " " + $0 } ?? "")
      lines.append("  " + flag.padding(to: 32) + optionHelp(option, defaultStore: defaultStore))
    }
    for info in Configuration.infoOptions {
      lines.append("  " + "\(info.short), \(info.name)".padding(to: 32) + info.help)
    }
    lines += ["", "EXIT CODES:"]
    lines += exitCodes.map { "  \($0.code)  \($0.meaning)" }
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

  /// The option's help, with the store default spelled out.
  package static func optionHelp(_ option: CommandLineOption, defaultStore: String?) -> String {
    guard option.name == "--store" else { return option.help }
    let rule = "\(option.help) (default \(Configuration.defaultStoreRule))"
    return defaultStore.map { rule + "; here: \($0)" } ?? rule
  }

  /// The one stderr line when stdin is a terminal, so a person knows what the silence means.
  package static func terminalHint(store: String?) -> String {
    "push-outbox: reading JSON-RPC 2.0 requests, one per line, from stdin; store: "
      + (store ?? "memory") + ". Ctrl-D ends; --help for more."
  }
}

extension String {
  fileprivate func padding(to width: Int) -> String {
    count >= width ? self + " " : self + String(repeating: " ", count: width - count)
  }
}
