// Fuzz target: the JSON reader, cross-checked against the writer.
//
// Every text the reader accepts must round-trip: its written form reads back to an equal value,
// writing that value again gives the same bytes, the tape's own encoder agrees with the writer,
// the output is one line, and the reader's duplicate-key flag matches a check on the tree.
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
public func fuzzJSON(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
  let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
  let value: JSONValue
  do { value = try JSONReader.parse(bytes) } catch { return 0 }
  let written = value.jsonBytes
  check(!written.contains(0x0A) && !written.contains(0x0D), "the writer wrote a line break", bytes)
  let again: JSONValue
  do { again = try JSONReader.parse(written) } catch {
    fail("the writer's output does not read back: \(error)", written)
  }
  check(again == value, "the value changed on a round trip", bytes)
  check(again.jsonBytes == written, "writing the re-read value gave other bytes", bytes)
  checkTape(bytes, written: written, value: value)
  return 0
}

/// The tape (the server's fast path) must agree with the tree: same encoding, same duplicate flag.
private func checkTape(_ bytes: [UInt8], written: [UInt8], value: JSONValue) {
  bytes.withUnsafeBufferPointer { buffer in
    guard let tape = try? JSONTape(buffer) else { fail("the tape refused what the reader accepted", bytes) }
    var encoded: [UInt8] = []
    tape.encode(tape.root, into: &encoded)
    check(encoded == written, "the tape's encoder and the writer disagree", bytes)
    check(tape.sawDuplicateKey == hasDuplicateKey(value), "the duplicate-key flag is wrong", bytes)
  }
}

private func check(_ condition: Bool, _ message: @autoclosure () -> String, _ input: [UInt8]) {
  if !condition { fail(message(), input) }
}

private func fail(_ message: String, _ input: [UInt8]) -> Never {
  fuzzFailure("FuzzJSON", message, input)
}

@_cdecl("FuzzJSON_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
  runFuzzer(argc, argv, fuzzJSON)
}
