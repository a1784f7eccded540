// Fuzz target: recovery from arbitrary segment and checkpoint bytes (see StoreBuilder.swift for the
// input's layout; byte 0 bit 0 starts with `--accept-loss`).
//
// Checks: opening the store never traps (it opens or refuses with a start-up error); every item it
// holds has the body of some CRC-valid item record present in the files (scanned independently:
// nothing is invented from bytes that fail their CRC); and a store that opened, once closed (final
// snapshot, and a `load.image`), opens again without `--accept-loss` (from that image, when it describes
// the files) and holds the same item bodies.
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

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRecovery(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
  let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
  guard let flags = input.first else { return 0 }
  let files = StoreBuilder(Array(input.dropFirst())).files
  let valid = validItemBodies(files)
  let directory = TempDirectory()
  defer { directory.remove() }
  for file in files { write(file.bytes, to: directory.path + "/" + file.name) }
  if getenv("PUSH_OUTBOX_FUZZ_KEEP") != nil {  // the files as written, before recovery touches them
    let copy = TempDirectory()
    for file in files { write(file.bytes, to: copy.path + "/" + file.name) }
    copy.remove()
  }
  guard let held = open(directory.path, acceptLoss: flags & 1 != 0, input: input) else { return 0 }
  for body in held where !valid.contains(body) {
    fail("an item whose body no CRC-valid record holds: \(String(decoding: body, as: UTF8.self))", input)
  }
  guard let again = open(directory.path, acceptLoss: false, input: input) else {
    fail("the store did not reopen after a clean close", input)
  }
  guard again.sorted(by: { $0.lexicographicallyPrecedes($1) }) == held.sorted(by: { $0.lexicographicallyPrecedes($1) })
  else { fail("\(held.count) items before a restart, \(again.count) after, or other bodies", input) }
  return 0
}

/// Opens the store, returns the bodies of the items it holds (nil when it refuses to start), and closes
/// it as the server does at exit (final snapshot). The lock is released when this returns.
private func open(_ path: String, acceptLoss: Bool, input: [UInt8]) -> [[UInt8]]? {
  var config = Configuration(storePath: path)
  config.fsync = .never
  config.snapshotInterval = 3600
  config.acceptLoss = acceptLoss
  config.fixedClock = 1_767_225_600_000
  config.idSeed = 1
  config.loadImageMinBytes = 0  // every close writes load.image: the reopen loads from it, and must hold the same
  let service = Service(config: config, log: Log(level: .error))
  do { try service.openDisk() } catch {
    if getenv("PUSH_OUTBOX_FUZZ_VERBOSE") != nil { Log.stderr("open refused: \(error.message)") }
    return nil
  }
  let items = service.store.items
  let bodies = items.table.rows.filter { !items.table.has(.removed, $0) }.map { Array(items.body(row: $0)) }
  service.disk?.finish(service.store, now: service.clock.now())
  return bodies
}

private func write(_ bytes: [UInt8], to path: String) {
  let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
  guard fd >= 0 else { return }
  _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
  close(fd)
}

private func fail(_ message: String, _ input: [UInt8]) -> Never {
  fuzzFailure("FuzzRecovery", message, input, asBytes: true)
}

@_cdecl("FuzzRecovery_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
  runFuzzer(argc, argv, fuzzRecovery)
}
