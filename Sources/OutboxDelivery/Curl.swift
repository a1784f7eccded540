import CurlShim
import OutboxSupport

/// The system's libcurl, loaded with `dlopen` the first time delivery needs it (never at start-up),
/// its functions called through `@convention(c)` pointers, so no headers or link flags are needed.
///
/// `curl_easy_setopt`, `curl_multi_setopt` and `curl_easy_getinfo` are variadic: they are called through `CurlShim`, whose
/// C code passes the variadic argument by the platform's rules (on Apple arm64 such arguments travel
/// on the stack, unlike named ones, so a fixed Swift signature would pass them wrongly).
///
/// `@unchecked Sendable`, because C function pointers and raw pointers are not `Sendable` to the
/// compiler. Safe because: every stored property is a `let` set once in `init`, which runs once
/// (for `shared`, a global initialized once by the runtime before any thread can read it); they hold
/// addresses of functions in a library that is never `dlclose`d, so they stay valid for the
/// process's life; and `init` calls `curl_global_init` before anything else can call libcurl, as
/// libcurl requires for its other functions to be thread-safe. The thread rule left is libcurl's:
/// a multi handle and its easy handles are used by one thread, which `CurlEngine` ensures (only its
/// own thread touches them; other threads only call `curl_multi_wakeup`).
final class Curl: @unchecked Sendable {
  typealias Handle = UnsafeMutableRawPointer
  typealias Callback = @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int

  let easyInit: @convention(c) () -> Handle?
  let easyCleanup: @convention(c) (Handle) -> Void
  let easyPerform: @convention(c) (Handle) -> Int32
  let easyStrerror: @convention(c) (Int32) -> UnsafePointer<CChar>?
  private let setopt: UnsafeMutableRawPointer
  private let getinfo: UnsafeMutableRawPointer
  let slistAppend: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>) -> UnsafeMutableRawPointer?
  let slistFree: @convention(c) (UnsafeMutableRawPointer?) -> Void
  let multiInit: @convention(c) () -> Handle?
  let multiAdd: @convention(c) (Handle, Handle) -> Int32
  let multiRemove: @convention(c) (Handle, Handle) -> Int32
  let multiPerform: @convention(c) (Handle, UnsafeMutablePointer<Int32>) -> Int32
  /// `curl_multi_poll(multi, extra_fds, extra_nfds, timeout_ms, numfds)` (libcurl 7.66 and later).
  let multiPoll: @convention(c) (Handle, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?) -> Int32
  /// `curl_multi_wakeup`, the one multi call safe from another thread (libcurl 7.68 and later).
  let multiWakeup: @convention(c) (Handle) -> Int32
  let multiInfoRead: @convention(c) (Handle, UnsafeMutablePointer<Int32>) -> UnsafeMutableRawPointer?
  private let multiSetopt: UnsafeMutableRawPointer

  /// The library, loaded once; nil (with the reason) when it cannot be found.
  static let shared: Result<Curl, DeliveryFailure> = load()

  private init(_ library: UnsafeMutableRawPointer) throws(DeliveryFailure) {
    func symbol<T>(_ name: String, _: T.Type) throws(DeliveryFailure) -> T {
      guard let pointer = dlsym(library, name) else { throw .transport("libcurl has no \(name)") }
      return unsafeBitCast(pointer, to: T.self)
    }
    let globalInit = try symbol("curl_global_init", (@convention(c) (Int) -> Int32).self)
    easyInit = try symbol("curl_easy_init", (@convention(c) () -> Handle?).self)
    easyCleanup = try symbol("curl_easy_cleanup", (@convention(c) (Handle) -> Void).self)
    easyPerform = try symbol("curl_easy_perform", (@convention(c) (Handle) -> Int32).self)
    easyStrerror = try symbol("curl_easy_strerror", (@convention(c) (Int32) -> UnsafePointer<CChar>?).self)
    setopt = try symbol("curl_easy_setopt", UnsafeMutableRawPointer.self)
    getinfo = try symbol("curl_easy_getinfo", UnsafeMutableRawPointer.self)
    slistAppend = try symbol(
      "curl_slist_append",
      (@convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>) -> UnsafeMutableRawPointer?).self)
    slistFree = try symbol("curl_slist_free_all", (@convention(c) (UnsafeMutableRawPointer?) -> Void).self)
    multiInit = try symbol("curl_multi_init", (@convention(c) () -> Handle?).self)
    multiAdd = try symbol("curl_multi_add_handle", (@convention(c) (Handle, Handle) -> Int32).self)
    multiRemove = try symbol("curl_multi_remove_handle", (@convention(c) (Handle, Handle) -> Int32).self)
    multiPerform = try symbol(
      "curl_multi_perform", (@convention(c) (Handle, UnsafeMutablePointer<Int32>) -> Int32).self)
    multiPoll = try symbol(
      "curl_multi_poll",
      (@convention(c) (Handle, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?) -> Int32).self)
    multiWakeup = try symbol("curl_multi_wakeup", (@convention(c) (Handle) -> Int32).self)
    multiInfoRead = try symbol(
      "curl_multi_info_read", (@convention(c) (Handle, UnsafeMutablePointer<Int32>) -> UnsafeMutableRawPointer?).self)
    multiSetopt = try symbol("curl_multi_setopt", UnsafeMutableRawPointer.self)
    guard globalInit(3) == 0 else { throw .transport("curl_global_init failed") }  // CURL_GLOBAL_ALL
  }

  private static func load() -> Result<Curl, DeliveryFailure> {
    #if canImport(Darwin)
    let names = ["libcurl.4.dylib", "/usr/lib/libcurl.4.dylib"]
    #else
    let names = ["libcurl.so.4", "libcurl-gnutls.so.4"]
    #endif
    for name in names {
      guard let library = dlopen(name, RTLD_NOW | RTLD_LOCAL) else { continue }
      do throws(DeliveryFailure) { return .success(try Curl(library)) } catch { return .failure(error) }
    }
    return .failure(.transport("libcurl is not installed (tried \(names.joined(separator: ", ")))"))
  }

  func set(_ handle: Handle, _ option: Int32, _ value: UnsafeRawPointer?) -> Int32 {
    po_curl_setopt_pointer(setopt, handle, option, value)
  }

  func set(_ handle: Handle, _ option: Int32, long value: Int) -> Int32 {
    po_curl_setopt_long(setopt, handle, option, value)
  }

  /// `curl_multi_setopt(multi, option, long)`: the same variadic shape as the easy one's.
  func setMulti(_ multi: Handle, _ option: Int32, long value: Int) -> Int32 {
    po_curl_setopt_long(multiSetopt, multi, option, value)
  }

  func info(_ handle: Handle, _ item: Int32, _ out: UnsafeMutableRawPointer) -> Int32 {
    po_curl_getinfo(getinfo, handle, item, out)
  }

  func message(_ code: Int32) -> String {
    easyStrerror(code).map { String(cString: $0) } ?? "curl error \(code)"
  }
}

/// libcurl's option and info numbers used here (from curl.h, stable across versions).
enum CurlOption {
  static let writeData: Int32 = 10001, url: Int32 = 10002, postFields: Int32 = 10015, userAgent: Int32 = 10018
  static let httpHeader: Int32 = 10023, headerData: Int32 = 10029, writeFunction: Int32 = 20011
  static let headerFunction: Int32 = 20079, postFieldSize: Int32 = 60, post: Int32 = 47, noSignal: Int32 = 99
  static let timeoutMs: Int32 = 155, connectTimeoutMs: Int32 = 156, protocols: Int32 = 181, redirProtocols: Int32 = 182
  static let responseCode: Int32 = 0x200002  // CURLINFO_LONG + 2
  static let httpAndHTTPS = 3  // CURLPROTO_HTTP | CURLPROTO_HTTPS
  static let timedOut: Int32 = 28
  static let copyPostFields: Int32 = 10165, pipeWait: Int32 = 237
  /// Multi options: CURLMOPT_PIPELINING (2: multiplex on HTTP/2), CURLMOPT_MAXCONNECTS.
  static let multiPipelining: Int32 = 3, multiMaxConnects: Int32 = 6
  static let multiplex = 2
  /// `CURLMSG_DONE`.
  static let messageDone: Int32 = 1
}
