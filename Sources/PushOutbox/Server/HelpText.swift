/// The `--help` text, built from the option table so it never drifts from the parser.
package enum HelpText {
  package static let version = "0.1.0"

  package static var usage: String {
    var lines = [
      "push-outbox \(version): a pending-analytics outbox for Braze push data, speaking",
      "line-delimited JSON-RPC 2.0 on stdin/stdout (one request per line, one response per line).",
      "",
      "USAGE: push-outbox [options]",
      "       push-outbox deliver [options]   deliver to Braze once, then exit (0: nothing left retrying)",
      "",
      "OPTIONS (each also read from its environment variable, e.g. PUSH_OUTBOX_STORE):",
    ]
    for option in Configuration.options {
      let flag = option.name + (option.valueName.map { " " + $0 } ?? "")
      lines.append("  " + flag.padding(to: 30) + option.help)
    }
    lines += [
      "  " + "--help".padding(to: 30) + "show this help",
      "  " + "--version".padding(to: 30) + "print the version",
      "",
      "EXAMPLE:",
      #"  echo '{"jsonrpc":"2.0","id":1,"method":"saveCustomEvent","params":{"name":"push_opened"}}' \"#,
      "    | push-outbox --memory",
      "",
      "Stdout carries only JSON-RPC responses; logs go to stderr. Methods: see Protocol/openrpc.json.",
    ]
    return lines.joined(separator: "\n")
  }
}

extension String {
  fileprivate func padding(to width: Int) -> String {
    count >= width ? self + " " : self + String(repeating: " ", count: width - count)
  }
}
