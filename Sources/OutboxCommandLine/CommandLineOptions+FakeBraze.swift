import OutboxFakeBraze
import OutboxJSON
import OutboxServer
import OutboxSupport

/// `push-outbox fake-braze`'s flags, and `deliver --max-seconds` (Clients/testing.md).
extension Configuration {
  static let fakeBrazeOptions: [CommandLineOption] = [
    .init(
      name: "--listen", valueName: "HOST:PORT",
      help: "where to serve, a numeric IPv4 address (default 127.0.0.1:0; the port is the first stdout line)",
      command: .fakeBraze
    ) { c, v throws(UsageError) in
      guard c.fake.listen(v) else { throw UsageError("needs PORT or HOST:PORT with a numeric IPv4 host") }
    },
    .init(
      name: "--api-key", valueName: "KEY", help: "the bearer key to require (default: any key, but one)",
      command: .fakeBraze
    ) { c, v throws(UsageError) in
      guard !v.isEmpty, v.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
        throw UsageError("needs printable characters, no spaces")
      }
      c.fake.apiKey = v
    },
    .init(
      name: "--record", valueName: "FILE", help: "write every request (key masked) and its answer as a JSON line",
      command: .fakeBraze
    ) { c, v throws(UsageError) in
      guard !v.isEmpty else { throw UsageError("needs a path, not an empty string") }
      c.fake.recordPath = v
    },
    .init(
      name: "--delay-ms", valueName: "MS", help: "answer every /users/track request after MS ms (default 0)",
      command: .fakeBraze
    ) { c, v throws(UsageError) in c.fake.delayMs = try int(v, min: 0, max: 600_000) },
    .init(
      name: "--script", valueName: "STEPS",
      help: "answer the next requests with these statuses in order, e.g. 500,429,drop (then check as usual)",
      command: .fakeBraze
    ) { c, v throws(UsageError) in
      guard let steps = ScriptChange.steps(flag: v) else {
        throw UsageError("needs statuses (100 to 599) or drop, separated by commas, e.g. 500,429,drop")
      }
      c.fake.steps += steps
    },
    .init(
      name: "--script-file", valueName: "FILE", help: "a script as POST /_fake/script takes it (JSON)",
      command: .fakeBraze
    ) { c, v throws(UsageError) in
      let bytes: [UInt8]?
      do { bytes = try FileIO.read(v) } catch { throw UsageError("cannot read \(v)") }
      let change: ScriptChange
      do {
        switch ScriptChange.parse(try JSONReader.parse(bytes ?? [])) {
        case .success(let read): change = read
        case .failure(let error): throw UsageError("\(v): \(error.message)")
        }
      } catch let error as UsageError { throw error } catch { throw UsageError("\(v) is not JSON") }
      c.fake.steps += change.steps ?? []
      if let limit = change.rateLimit { c.fake.rateLimit = limit }
      if let ms = change.delayMs { c.fake.delayMs = ms }
    },
    .init(
      name: "--retry-after", valueName: "SECONDS", help: "add Retry-After to every scripted 429 and 5xx answer",
      command: .fakeBraze
    ) { c, v throws(UsageError) in c.fake.retryAfter = try int(v, min: 0, max: 86_400) },
    .init(
      name: "--rate-limit", valueName: "N/S",
      help: "answer 429 above N requests per S seconds, with X-RateLimit-* headers (default none)",
      command: .fakeBraze
    ) { c, v throws(UsageError) in
      guard let limit = FakeRateLimit(v) else { throw UsageError("needs N/S, e.g. 100/1") }
      c.fake.rateLimit = limit
    },
    .init(
      name: "--max-objects", valueName: "N", help: "most objects per array (default 75, Braze's limit)",
      command: .fakeBraze
    ) { c, v throws(UsageError) in c.fake.maxObjects = try int(v, min: 1, max: 100_000) },
    .init(
      name: "--combined-limit", valueName: nil, help: "count --max-objects across the three arrays together",
      command: .fakeBraze
    ) { c, v throws(UsageError) in c.fake.combined = try bool(v) },
    .init(
      name: "--max-body-bytes", valueName: "N", help: "larger bodies get 413 (default 8388608)", command: .fakeBraze
    ) { c, v throws(UsageError) in c.fake.maxBodyBytes = try int(v, min: 1024, max: Limits.bytes) },
    .init(
      name: "--keep", valueName: "N", help: "requests GET /_fake/requests remembers (default 100000)",
      command: .fakeBraze
    ) { c, v throws(UsageError) in c.fake.keep = try int(v, min: 1, max: 10_000_000) },
    .init(
      name: "--stop-on-stdin-eof", valueName: nil, help: "exit when stdin closes (for a harness that spawned it)",
      command: .fakeBraze
    ) { c, v throws(UsageError) in c.fake.stopOnStdinEOF = try bool(v) },
  ]

  static let deliverOptions: [CommandLineOption] = [
    .init(
      name: "--max-seconds", valueName: "SECONDS",
      help: "keep retrying what fails for up to SECONDS, then exit 6 if anything is left (default: 8 passes)",
      command: .deliver
    ) { c, v throws(UsageError) in c.deliverMaxSeconds = try number(v, min: 0.1, max: 86_400) }
  ]
}
