import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
package import OutboxServer
import OutboxStore
import OutboxSupport

/// `push-outbox import [--user JSON] [FLAGS] FILE`: imports the guide's App Group storage from the
/// command line.
///
/// FILE (or `-` for stdin) is the JSON object `plutil -convert json` makes of the App Group's
/// `UserDefaults` plist. Only `pending_custom_events`, `pending_custom_attributes` and
/// `pending_user_attributes` are read; every other key is ignored. The file is read like one request
/// (at most `--max-line-bytes`, `--max-depth` deep) and imported through the same code as
/// `importLegacy`, in chunks of `--max-batch` elements, each committed to the journal before the next.
/// Same flags and store as the server. Each rejected element is one stderr line (list, index, reason),
/// then a summary line. Exit 0: everything imported; 1: some elements rejected (the valid ones are
/// saved); 2: usage error, or FILE unreadable or not the expected JSON; else the store's start-up code.
package enum ImportCommand {
  /// The `--user` value, checked by the same rules as a save's `user` and written back as JSON:
  /// `{"externalId": …}`, `{"alias": {…}}`, `{"brazeId": …}` and so on.
  static func parseUser(_ text: String) throws(UsageError) -> [UInt8] {
    guard let value = try? JSONReader.parse(text, maxDepth: 16) else { throw UsageError("--user is not JSON: \(text)") }
    var issues = Issues()
    guard let user = UserIdentifier.parse(value, path: "--user", issues: &issues), issues.isEmpty else {
      throw UsageError(issues.errors.map { "\($0.path): \($0.message)" }.joined(separator: "; "))
    }
    var bytes: [UInt8] = []
    user.appendJSON(to: &bytes)
    return bytes
  }

  /// Imports `file` into the store `config` names, every item for `user` when given.
  package static func run(_ config: Configuration, file: String, user: [UInt8]? = nil) -> ExitCode {
    _ = Signals.install()  // a signal while the file is read ends the import before anything is saved
    let bytes: [UInt8]
    do { bytes = try readFile(file, limit: config.maxLineBytes) } catch {
      Log.stderr("push-outbox import: \(error.message)")
      return StopRequest.isRequested ? .failure : .usage
    }
    let service = Service(config: config)
    do { try service.openDisk() } catch {
      Log.stderr("push-outbox import: \(error.message)")
      return error.exit
    }
    defer { service.finish() }
    return bytes.withUnsafeBufferPointer { buffer in
      do {
        let tape = try JSONTape(buffer, maxDepth: config.maxDepth)
        let elements = try LegacyFile.elements(tape)
        if elements.isEmpty {
          Log.stderr(
            "push-outbox import: \(file) holds no element under pending_custom_events, pending_custom_attributes or pending_user_attributes"
          )
        }
        if user == nil && !elements.isEmpty { Log.stderr(noUserWarning) }
        return importAll(tape, elements, user, service)
      } catch let error as UsageError {
        Log.stderr("push-outbox import: \(file): \(error.message)")
      } catch let error as JSONParseError {
        Log.stderr("push-outbox import: \(file): not JSON: \(error.reason) at byte \(error.offset)")
      } catch {
        Log.stderr("push-outbox import: \(file): \(error)")
      }
      return .usage
    }
  }

  /// Said when the items are imported without `--user`: how they will (not) be delivered.
  static let noUserWarning =
    "push-outbox import: no --user: the imported items have no user, so delivery and a usersTrack flush"
    + " move them to the dead letters (no_identifier) unless a later flush gives --default-user JSON"

  /// Imports in chunks of `--max-batch`, committing each; prints rejections and the summary.
  private static func importAll(
    _ tape: JSONTape, _ elements: [GuideStorage.Element], _ user: [UInt8]?, _ service: Service
  ) -> ExitCode {
    var saved = 0
    var failed = 0
    var start = 0
    while start < elements.count {
      let chunk = Array(elements[start..<min(start + service.config.maxBatch, elements.count)])
      start += chunk.count
      var result = ImportLegacy.run(tape, chunk, user: user, service)
      if let failure = service.store.commit() {
        let refusal = StoreError.storageUnavailable(failure.description).rpcError
        for n in result.outcomes.indices where result.outcomes[n].saved {
          result.outcomes[n].error = refusal
          result.outcomes[n].ids = []
        }
      }
      for outcome in result.outcomes where !outcome.saved { Log.stderr(LegacyFile.rejection(outcome)) }
      saved += result.saved
      failed += result.failed
    }
    let total = saved + failed
    Log.stderr(
      "push-outbox import: imported \(saved) of \(total) elements, rejected \(failed); \(service.store.count) items pending"
    )
    return failed == 0 ? .success : .failure
  }

  /// FILE (the one argument that is `-` or not a flag or a flag's value) and the flags.
  static func split(_ arguments: [String]) throws(UsageError) -> (String?, [String]) {
    var file: String? = nil
    var flags: [String] = []
    var rest = arguments[...]
    while let arg = rest.popFirst() {
      if arg == "-" || !arg.hasPrefix("-") {
        if let file { throw UsageError("takes one FILE; got \(file) and \(arg)") }
        file = arg
        continue
      }
      flags.append(arg)
      let takesValue =
        arg == "--generate-completion" || Configuration.options.first { $0.name == arg }?.valueName != nil
      if takesValue, let value = rest.popFirst() { flags.append(value) }
    }
    return (file, flags)
  }

  /// The whole file (or stdin for `-`), refused past `limit` bytes.
  private static func readFile(_ path: String, limit: Int) throws(UsageError) -> [UInt8] {
    let fd = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
    if fd < 0 { throw UsageError("cannot open \(path): \(errnoText(errno))") }
    defer { if fd != 0 { close(fd) } }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
      let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if StopRequest.isRequested { throw UsageError("stopped by a signal while reading \(path); nothing was imported") }
      if n < 0 && errno == EINTR { continue }
      if n < 0 { throw UsageError("cannot read \(path): \(errnoText(errno))") }
      if n == 0 { return bytes }
      bytes.append(contentsOf: chunk[0..<n])
      if bytes.count > limit { throw UsageError("\(path) is over --max-line-bytes (\(limit) bytes)") }
    }
  }
}

/// The three lists in a `plutil -convert json` file, and the stderr line for a rejected element.
enum LegacyFile {
  /// Every element of the three lists, in import order. Other keys are ignored.
  static func elements(_ tape: JSONTape) throws(UsageError) -> [GuideStorage.Element] {
    guard tape.isObject(tape.root) else {
      throw UsageError(
        "must be a JSON object (plutil -convert json of the App Group plist), not \(tape.typeName(tape.root))")
    }
    if tape.sawDuplicateKey, let path = tape.duplicateKeyPath(tape.root) {
      throw UsageError("the key at \(path) appears more than once")
    }
    var elements: [GuideStorage.Element] = []
    for list in GuideStorage.List.allCases {
      guard let array = tape.member(tape.root, list.key) else { continue }
      guard tape.isArray(array) else { throw UsageError("\(list.key) must be an array, not \(tape.typeName(array))") }
      for (index, (_, node)) in tape.elements(array).enumerated() {
        elements.append(GuideStorage.Element(list: list, index: index, node: node))
      }
    }
    return elements
  }

  /// `pending_custom_events[2]: event_name: missing: a pending custom event needs …`.
  static func rejection(_ outcome: ImportOutcome) -> String {
    let place = "\(outcome.list.key)[\(outcome.index)]" + (outcome.key.map { " key \"\($0)\"" } ?? "")
    guard let error = outcome.error else { return place + ": imported" }
    let issues = error.data?["errors"]?.arrayValue ?? []
    let reasons =
      issues.isEmpty
      ? [
        "\(error.message) (\(error.code.rawValue)" + (error.data?["reason"]?.stringValue.map { ", \($0)" } ?? "") + ")"
      ]
      : issues.map { issue in
        let path = issue["path"]?.stringValue ?? ""
        let code = issue["code"]?.stringValue ?? ""
        return (path.isEmpty ? "" : path + ": ") + code + ": " + (issue["message"]?.stringValue ?? "")
      }
    return "push-outbox import: rejected \(place): " + reasons.joined(separator: "; ")
  }
}
