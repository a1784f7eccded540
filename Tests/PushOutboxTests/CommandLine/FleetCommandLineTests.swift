import Testing

@testable import OutboxCommandLine
@testable import OutboxDelivery
@testable import OutboxFleet
@testable import OutboxNATS
@testable import OutboxServer

/// The fleet's flags on a serving process: `--relay`, `--deliver --from` and the shared NATS flags.
@Suite struct FleetCommandLineTests {
  private let env: [String: String] = ["HOME": "/home/u", "BRAZE_API_KEY": "k"]
  private let braze = ["--braze-endpoint", "https://rest.iad-01.braze.com"]

  private func serve(
    _ args: [String], _ extra: [String: String] = [:]
  ) throws(UsageError) -> (
    Configuration, RelayCommand.Options?, FleetDeliverCommand.Options?
  ) {
    let all = env.merging(extra) { $1 }
    guard case .serve(let config, let relay, let fleet) = try Invocation.parse(args, env: { all[$0] }) else {
      throw UsageError("not a run")
    }
    return (config, relay, fleet)
  }

  private func usageError(_ args: [String]) -> String? {
    do { _ = try serve(args); return nil } catch { return error.message }
  }

  @Test func relayTakesTheSharedNATSFlagsAndTheirEnvironmentTwins() throws {
    let (_, relay, fleet) = try serve(
      ["--memory", "--relay", "nats://127.0.0.1:4223", "--nats-stream", "S1"], ["PUSH_OUTBOX_NATS_MAX_BYTES": "4096"])
    #expect(relay?.to == NATSAddress(host: "127.0.0.1", port: 4223))
    #expect(relay?.stream == "S1" && relay?.maxBytes == 4096)
    #expect(fleet == nil)
    #expect(try serve(["--memory"]).1 == nil)
  }

  @Test func deliverFromWhileServingIsAFleetDelivererAndNotALocalOne() throws {
    let (config, relay, fleet) = try serve(
      [
        "--memory", "--deliver", "--from", "nats://127.0.0.1:4222", "--leader-lease", "2", "--relay",
        "nats://127.0.0.1:4222",
      ] + braze)
    #expect(fleet?.from == NATSAddress(host: "127.0.0.1", port: 4222) && fleet?.leaseSeconds == 2)
    #expect(relay != nil)
    #expect(config.delivery.background == false)
  }

  @Test func misusesAreUsageErrors() {
    #expect(
      usageError(["--memory", "--relay", "nats://127.0.0.1:4222", "--deliver"] + braze)?
        .contains("--relay and --deliver cannot be used together") == true)
    #expect(usageError(["--memory", "--from", "nats://127.0.0.1:4222"])?.contains("--from needs --deliver") == true)
    #expect(usageError(["--memory", "--leader-lease", "2"])?.contains("--leader-lease needs --from") == true)
    #expect(usageError(["--memory", "--relay", "nats://10.1.2.3:4222"])?.contains("not loopback") == true)
    #expect(usageError(["--memory", "--relay", "nats://10.1.2.3:4222", "--nats-allow-plaintext"]) == nil)
  }
}
