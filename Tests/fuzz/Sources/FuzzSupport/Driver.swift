#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// SwiftPM links an executable target with `main` aliased to `<Module>_main`; each target defines
// that entry point and hands over to libFuzzer's driver here (what libFuzzer's own `main` does).
@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(
  _ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
  _ body: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// Runs libFuzzer with `body` as the target (`LLVMFuzzerTestOneInput`).
package func runFuzzer(
  _ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
  _ body: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32 {
  var argc = argc
  var argv = argv
  return runDriver(&argc, &argv, body)
}

/// A broken invariant: says which and shows the input's start on stderr, then aborts, so libFuzzer
/// records the input as a crash. `asBytes` prints byte values (binary inputs) instead of text.
package func fuzzFailure(_ target: String, _ message: String, _ input: [UInt8], asBytes: Bool = false) -> Never {
  let shown = asBytes ? "\(input.prefix(200).map { String($0) })" : String(decoding: input.prefix(600), as: UTF8.self)
  let text = Array("\(target): \(message)\ninput: \(shown)\n".utf8)
  _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
  abort()
}
