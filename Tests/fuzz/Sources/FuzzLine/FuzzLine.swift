// Fuzz target: the whole line path. Arbitrary bytes, cut into chunks whose sizes come from the
// input, go through `MessageFramer` (newline or Content-Length framing) into `Server.handle`, with a
// render after every chunk (one burst per chunk, as `RequestLoop` does when no more input is waiting).
//
// Input: byte 0 holds flags (bit 0: a store in a temp dir instead of memory; bit 1: a 64-byte
// `--max-line-bytes`; bit 2: `--max-batch 3`; bit 3: Content-Length framing, replies framed the same
// way), bytes 1–4 are chunk sizes (1–255; 0 means the whole rest), the rest is the stream.
//
// Checks: nothing traps; every output line is one JSON line our reader accepts, holding a response
// object or a non-empty array of them; each request gets exactly one reply, counted per id against
// an independent model (`Expected`); the general path, the fast save path and `--threads 2` (each
// chunk one batch, its end answered with the next, as `RequestLoop` does while input waits) write
// the same bytes (in memory); with a store, a restart holds the same items.
import FuzzSupport
import OutboxCommandLine
import OutboxDelivery
import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxServer
import OutboxStore
import OutboxSupport
import OutboxTransport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

struct Setup {
  var disk: Bool
  var maxLineBytes: Int
  var maxBatch: Int
  /// Content-Length framing (the LSP base protocol) instead of lines.
  var headers: Bool
  var chunks: [Int]
  var stream: ArraySlice<UInt8>

  init(_ bytes: [UInt8]) {
    let flags = bytes.first ?? 0
    disk = flags & 1 != 0
    maxLineBytes = flags & 2 != 0 ? 64 : 1 << 16
    maxBatch = flags & 4 != 0 ? 3 : 10_000
    headers = flags & 8 != 0
    chunks = bytes.dropFirst().prefix(4).map { $0 == 0 ? Int.max : Int($0) }
    if chunks.isEmpty { chunks = [Int.max] }
    stream = bytes.dropFirst(5)
  }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLine(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
  let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
  let setup = Setup(bytes)
  let expected = Expected(setup)
  if setup.disk {
    runWithStore(setup, expected: expected, input: bytes)
  } else {
    let fast = run(setup, service: makeService(setup, store: nil), fastSaves: true)
    check(fast, expected: expected, input: bytes)
    let general = run(setup, service: makeService(setup, store: nil), fastSaves: false)
    guard fast == general else { fail("the fast save path and the general path wrote different replies", bytes) }
    // Batches, as the loop makes them (which, unlike `run`, stop at `exit`), on one thread and two.
    let oneThread = runInBatches(setup, service: makeService(setup, store: nil, threads: 1))
    let twoThreads = runInBatches(setup, service: makeService(setup, store: nil, threads: 2))
    guard oneThread == twoThreads else { fail("--threads 2 wrote other replies than one thread", bytes) }
  }
  return 0
}

func makeService(_ setup: Setup, store: String?, threads: Int = 1) -> Service {
  var config = Configuration(storePath: store)
  config.threads = threads
  config.preparerHeadStart = threads > 1
  config.memory = store == nil
  config.fsync = .never
  config.snapshotInterval = 3600
  config.maxLineBytes = setup.maxLineBytes
  config.maxBatch = setup.maxBatch
  config.fixedClock = 1_767_225_600_000  // 2026-01-01T00:00:00Z
  config.idSeed = 1
  return Service(config: config, log: Log(level: .error))
}

/// Feeds the stream chunk by chunk, rendering after each; returns every output byte.
func run(_ setup: Setup, service: Service, fastSaves: Bool) -> [UInt8] {
  let server = Server(service: service)
  server.fastSaves = fastSaves && server.fastSaves
  return feed(setup, server) { framed in framed.forEach { dispatch($0, server) } }
}

/// `run` as the loop does it with `--threads 2`: each chunk's messages as one batch, each batch
/// left to the next (`Server.postedBatch`), the last answered only before the last render.
func runInBatches(_ setup: Setup, service: Service) -> [UInt8] {
  let server = Server(service: service)
  return feed(setup, server, last: server.answerPostedBatch) { server.handle($0) }
}

/// The stream framed chunk by chunk, each chunk's messages handed to `handle` together, a render
/// after each chunk and after the end of input (`last` runs before that render); every output byte.
private func feed(
  _ setup: Setup, _ server: Server, last: () -> Void = {}, _ handle: (FramedBatch) -> Void
) -> [UInt8] {
  var framer = MessageFramer(setup.headers ? .contentLength : .newline, maxLineBytes: setup.maxLineBytes)
  let frame = { (lines: [UInt8]) in setup.headers ? MemoryTransport.headerFramed(lines) : lines }
  var output: [UInt8] = []
  var rest = setup.stream
  var n = 0
  while !rest.isEmpty {
    let piece = rest.prefix(setup.chunks[n % setup.chunks.count])
    rest = rest.dropFirst(piece.count)
    n += 1
    var batch = FramedBatch()
    Array(piece).withUnsafeBufferPointer { chunk in framer.feed(chunk) { batch.append($0) } }
    handle(batch)
    server.render()
    output += frame(server.output)
    server.clearOutput()
  }
  var batch = FramedBatch()
  framer.finish { batch.append($0) }
  handle(batch)
  last()
  server.render()
  return output + frame(server.output)
}

private func dispatch(_ framed: FramedLine, _ server: Server) {
  switch framed {
  case .line(let bytes): server.handle(line: bytes)
  case .tooLong(let length): server.handleOversizedLine(length: length)
  case .fault(let fault): server.handleHeaderFault(fault)
  }
}

private func runWithStore(_ setup: Setup, expected: Expected, input: [UInt8]) {
  let directory = TempDirectory()
  defer { directory.remove() }
  let held = serveOnce(setup, directory: directory.path, expected: expected, input: input)
  let again = makeService(setup, store: directory.path)
  do { try again.openDisk() } catch { fail("the store did not reopen: \(error)", input) }
  guard again.store.count == held else { fail("\(held) items before a restart, \(again.store.count) after", input) }
  again.disk?.finish(again.store, now: again.clock.now())
}

/// Serves the stream with a store, stops as `RequestLoop` does (final snapshot), and returns how many
/// items are held. The service (and with it the store's lock) is gone when this returns.
private func serveOnce(_ setup: Setup, directory: String, expected: Expected, input: [UInt8]) -> Int {
  let service = makeService(setup, store: directory)
  do { try service.openDisk() } catch { fail("a fresh store did not open: \(error)", input) }
  let output = run(setup, service: service, fastSaves: true)
  check(output, expected: expected, input: input)
  service.disk?.finish(service.store, now: service.clock.now())
  return service.store.count
}

func fail(_ message: String, _ input: [UInt8]) -> Never {
  fuzzFailure("FuzzLine", message, input)
}

@_cdecl("FuzzLine_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
  runFuzzer(argc, argv, fuzzLine)
}
