import Testing

@testable import OutboxCommandLine
@testable import OutboxDelivery
@testable import OutboxDomain
@testable import OutboxJSON
@testable import OutboxJSONRPC
@testable import OutboxServer
@testable import OutboxStore
@testable import OutboxSupport
@testable import OutboxTransport

/// The command-line parser and what it generates (help, man page, completions), in process.
@Suite struct CommandLineTests {
  private static let home: [String: String] = ["HOME": "/home/u"]

  private func parse(_ args: [String], _ env: [String: String] = home) throws(UsageError) -> Invocation {
    try Invocation.parse(args, env: { env[$0] })
  }

  private func config(_ args: [String], _ env: [String: String] = home) throws -> Configuration {
    guard case .serve(let config, _, _) = try parse(args, env) else { throw UsageError("not a run") }
    return config
  }

  private func usageError(_ args: [String], _ env: [String: String] = home) -> String? {
    do { _ = try parse(args, env); return nil } catch { return error.message }
  }

  @Test func shortAndLongInfoFlags() throws {
    for flag in ["-V", "--version"] {
      guard case .version = try parse([flag]) else { Testing.Issue.record("\(flag)"); continue }
    }
    for flag in ["-h", "--help"] {
      guard case .help(nil) = try parse([flag]) else { Testing.Issue.record("\(flag)"); continue }
    }
  }

  @Test func defaultStoreFallsBackToLocalState() throws {
    #expect(try config([]).storePath == "/home/u/.local/state/push-outbox")
    #expect(try config([], ["HOME": "/h", "XDG_STATE_HOME": "/s"]).storePath == "/s/push-outbox")
    #expect(try config([], ["HOME": "/h", "XDG_STATE_HOME": "relative"]).storePath == "/h/.local/state/push-outbox")
    #expect(usageError([], [:])?.contains("no store directory") == true)
  }

  @Test func conflictingFlagsAreAUsageError() throws {
    #expect(usageError(["--memory", "--store", "/x"]) == "--memory and --store cannot be used together")
    #expect(usageError(["--store=/x", "--memory"]) == "--memory and --store cannot be used together")
    let both = ["PUSH_OUTBOX_MEMORY": "1", "PUSH_OUTBOX_STORE": "/x", "HOME": "/h"]
    #expect(usageError([], both) == "PUSH_OUTBOX_MEMORY and PUSH_OUTBOX_STORE cannot be used together")
    // Across places the command line wins over the environment twin.
    #expect(try config(["--store", "/x"], ["PUSH_OUTBOX_MEMORY": "1"]).effectiveStorePath == "/x")
    #expect(try config(["--memory"], ["PUSH_OUTBOX_STORE": "/x"]).effectiveStorePath == nil)
  }

  @Test func emptyStoreIsAUsageError() {
    #expect(usageError(["--store", ""]) == "--store needs a directory, not an empty string")
    #expect(usageError(["--store="]) == "--store needs a directory, not an empty string")
  }

  @Test func unknownFlagsSuggestTheNearestOne() {
    #expect(usageError(["--memroy"]) == "unknown option --memroy; did you mean --memory?")
    #expect(usageError(["--max-dpeth=3"]) == "unknown option --max-dpeth=3; did you mean --max-depth?")
    #expect(usageError(["--zzzzzzzzzzzz"]) == "unknown option --zzzzzzzzzzzz")
  }

  @Test func environmentErrorsNameTheVariable() {
    let message = usageError([], ["HOME": "/h", "PUSH_OUTBOX_MAX_DEPTH": "abc"])
    #expect(message == "PUSH_OUTBOX_MAX_DEPTH=abc needs a whole number from 2 to 1000")
    #expect(usageError(["--max-depth", "abc"]) == "--max-depth needs a whole number from 2 to 1000")
    #expect(usageError(["--fsync", "sometimes"]) == "--fsync must be always, everysec or never")
  }

  @Test func logFormatAndChoices() throws {
    #expect(try config(["--log-format", "json"]).logFormat == .json)
    #expect(try config([], ["HOME": "/h", "PUSH_OUTBOX_LOG_FORMAT": "json"]).logFormat == .json)
    #expect(usageError(["--log-format", "xml"]) == "--log-format must be text or json")
  }

  @Test func generatorFlags() throws {
    guard case .manPage = try parse(["--generate-man"]) else { Testing.Issue.record("man"); return }
    guard case .completion(.zsh) = try parse(["--generate-completion", "zsh"]) else {
      Testing.Issue.record("zsh"); return
    }
    #expect(usageError(["--generate-completion", "tcsh"]) == "--generate-completion needs bash, zsh or fish")
  }

  @Test func helpManAndCompletionsListEveryOption() {
    let help = HelpText.usage(defaultStore: "/here/push-outbox")
    let man = CommandLineDocs.manPage()
    for option in Configuration.options {
      #expect(help.contains(option.name))
      #expect(man.contains(option.name.replacing("-", with: "\\-")))
      if option.command == nil { #expect(man.contains(option.environmentName.replacing("-", with: "\\-"))) }
      for shell in Shell.allCases { #expect(CommandLineDocs.completion(shell).contains(option.name.dropFirst(2))) }
    }
    for (code, _) in HelpText.exitCodes { #expect(help.contains("  \(code)  ")) }
    #expect(help.contains("here: /here/push-outbox") && help.contains("~/.local/state/push-outbox"))
    #expect(help.contains("-V, --version"))
  }

  @Test func subcommandsParseIntoOneValue() throws {
    guard case .flush(_, let options) = try parse(["flush", "--format=usersTrack", "--max", "5", "--memory"]) else {
      Testing.Issue.record("flush"); return
    }
    #expect(options.usersTrack && options.max == 5)
    guard case .import(_, "a.json", let user?) = try parse(["import", "--user", #"{"externalId":"u"}"#, "a.json"])
    else { Testing.Issue.record("import"); return }
    #expect(String(decoding: user, as: UTF8.self).contains("u"))
    guard case .help(.deliver) = try parse(["deliver", "-h"]) else { Testing.Issue.record("help"); return }
    #expect(usageError(["flush", "--user", "{}"]) == "unknown option --user")
    #expect(usageError(["import", "--formt", "x"]) == "unknown option --formt")
    #expect(usageError(["flsuh"]) == "unknown command flsuh; did you mean flush?")
    #expect(try config(["--memory=false", "--store", "/x"]).effectiveStorePath == "/x")
  }

  @Test func editDistance() {
    #expect(EditDistance.between("", "abc") == 3)
    #expect(EditDistance.between("kitten", "sitting") == 3)
    #expect(EditDistance.between("same", "same") == 0)
  }
}
