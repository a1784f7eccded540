import OutboxFakeBraze
import OutboxServer
import OutboxSupport

/// `push-outbox fake-braze`: binds, prints the port as the first stdout line (the only stdout
/// output), then serves until SIGTERM/SIGINT (or stdin's end with `--stop-on-stdin-eof`). Exit 0 on
/// a stop, 1 when it cannot listen or open `--record`.
@MainActor
enum FakeBrazeCommand {
  static func run(_ settings: FakeBrazeSettings, _ standard: StandardDescriptors) -> ExitCode {
    PushOutbox.refuseClosedStdout("push-outbox fake-braze", "the port", standard)
    let wakeup = Signals.install()
    let server: FakeBrazeServer
    do { server = try FakeBrazeServer(settings) } catch {
      Log.stderr("push-outbox fake-braze: \(error.message)")
      return .failure
    }
    guard PushOutbox.writeStdout(Array("\(server.port)\n".utf8)) else { return .failure }
    Log.stderr(
      "push-outbox fake-braze: serving POST /users/track on http://\(settings.host):\(server.port)"
        + (settings.apiKey == nil ? " (any bearer key)" : " (one bearer key)"))
    server.run(wakeup: wakeup)
    return .success
  }
}
