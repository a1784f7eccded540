package import OutboxDelivery
package import OutboxDomain
package import OutboxJSON
package import OutboxJSONRPC
package import OutboxServer
package import OutboxStore
package import OutboxSupport

/// A one-shot's own flags (`--name VALUE` or `--name=VALUE`), taken out of its arguments before the
/// service's flags are parsed.
enum OwnFlags {
  /// The values given for `names`, in order, and every other argument. `hint` explains a missing value.
  static func take(
    _ names: [String], from arguments: [String], hint: String? = nil
  ) throws(UsageError) -> (values: [(name: String, value: String)], rest: [String]) {
    var values: [(name: String, value: String)] = []
    var rest: [String] = []
    var index = 0
    while index < arguments.count {
      let argument = arguments[index]
      let (name, inline) = split(argument)
      index += 1
      guard names.contains(name) else {
        rest.append(argument)
        continue
      }
      guard let value = inline ?? (index < arguments.count ? arguments[index] : nil) else {
        throw UsageError("\(name) needs a value" + (hint.map { " (\($0))" } ?? ""))
      }
      if inline == nil { index += 1 }
      values.append((name, value))
    }
    return (values, rest)
  }

  private static func split(_ argument: String) -> (String, String?) {
    guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
    return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
  }
}
