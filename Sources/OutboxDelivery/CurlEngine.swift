import CurlShim
import Dispatch
import OutboxSupport
import Synchronization

/// Every HTTP request of the process, driven by one libcurl multi handle on one thread of its own
/// (libcurl's multi interface): any number of transfers at once without a thread each, connections
/// kept alive and reused between requests, and HTTP/2 multiplexing many requests on one connection
/// when the server offers it over ALPN (`CURLMOPT_PIPELINING` multiplex, `CURLOPT_PIPEWAIT` for
/// https, so new requests wait for a connection that may multiplex instead of opening their own).
///
/// Other threads only `submit`: the job is queued under a lock and `curl_multi_wakeup` cuts the
/// engine's poll short. The engine's thread alone touches the multi handle, the easy handles and
/// `running`. Each job's `done` runs once, on the engine's thread, with the answer or the failure.
///
/// `@unchecked Sendable`: the multi handle and `running`/`idle` are used by the engine's thread
/// only (`run` and what it calls); `submitted` is a `Mutex`; `curl` is itself safe to share.
final class CurlEngine: @unchecked Sendable {
  /// Started at the first request (never at start-up); the failure when libcurl cannot be loaded.
  static let shared: Result<CurlEngine, DeliveryFailure> = Curl.shared.flatMap(start)

  private let curl: Curl
  private let multi: Curl.Handle
  private let submitted = Mutex<[Job]>([])
  /// Transfers in progress, by easy handle address (engine thread only).
  private var running: [UInt: Job] = [:]
  /// Easy handles between requests, kept so libcurl's connection cache serves them again.
  private var idle: [Curl.Handle] = []
  static let idleLimit = 512

  private final class Job {
    let request: HTTPRequest
    let done: @Sendable (PostResult) -> Void
    let sink = ResponseSink()
    var headers: UnsafeMutableRawPointer?

    init(_ request: HTTPRequest, _ done: @escaping @Sendable (PostResult) -> Void) {
      self.request = request
      self.done = done
    }
  }

  private init(_ curl: Curl, _ multi: Curl.Handle) {
    self.curl = curl
    self.multi = multi
  }

  private static func start(_ curl: Curl) -> Result<CurlEngine, DeliveryFailure> {
    guard let multi = curl.multiInit() else { return .failure(.transport("curl_multi_init failed")) }
    _ = curl.setMulti(multi, CurlOption.multiPipelining, long: CurlOption.multiplex)
    _ = curl.setMulti(multi, CurlOption.multiMaxConnects, long: idleLimit)
    let engine = CurlEngine(curl, multi)
    guard DetachedThread.detach({ engine.run() }) else {
      return .failure(.transport("cannot start the HTTP thread"))
    }
    return .success(engine)
  }

  /// Queues a request; `done` gets its result on the engine's thread.
  func submit(_ request: HTTPRequest, _ done: @escaping @Sendable (PostResult) -> Void) {
    submitted.withLock { $0.append(Job(request, done)) }
    _ = curl.multiWakeup(multi)
  }

  // MARK: - The engine's thread

  private func run() {
    var active: Int32 = 0
    while true {
      for job in submitted.withLock({ jobs in
        defer { jobs.removeAll(keepingCapacity: true) }
        return jobs
      }) { add(job) }
      _ = curl.multiPerform(multi, &active)
      reap()
      _ = curl.multiPoll(multi, nil, 0, 1000, nil)
    }
  }

  /// Configures an easy handle for the job and adds it to the multi handle (or fails the job).
  private func add(_ job: Job) {
    let request = job.request
    guard Clock.monotonicSeconds() < request.notAfter else { return job.done(.failure(.notSent(HTTPRequest.late))) }
    guard let handle = idle.popLast() ?? curl.easyInit() else {
      return job.done(.failure(.transport("curl_easy_init failed")))
    }
    job.headers = curl.slistAppend(nil, "Content-Type: application/json")
    job.headers = request.bearer.withHeader { curl.slistAppend(job.headers, $0) }
    let box = Unmanaged.passRetained(job.sink).toOpaque()
    request.url.withCString { url in
      _ = curl.set(handle, CurlOption.url, url)
      _ = curl.set(handle, CurlOption.pipeWait, long: request.url.hasPrefix("https:") ? 1 : 0)
    }
    _ = curl.set(handle, CurlOption.httpHeader, job.headers)
    _ = curl.set(handle, CurlOption.post, long: 1)
    _ = curl.set(handle, CurlOption.postFieldSize, long: request.body.count)
    request.body.withUnsafeBytes { body in  // copied by libcurl (COPYPOSTFIELDS)
      _ = curl.set(handle, CurlOption.copyPostFields, body.baseAddress ?? UnsafeRawPointer(bitPattern: 1))
    }
    _ = curl.set(handle, CurlOption.noSignal, long: 1)
    _ = curl.set(handle, CurlOption.timeoutMs, long: request.timeoutMs)
    _ = curl.set(handle, CurlOption.connectTimeoutMs, long: request.connectTimeoutMs)
    _ = curl.set(handle, CurlOption.protocols, long: CurlOption.httpAndHTTPS)
    _ = curl.set(handle, CurlOption.redirProtocols, long: CurlOption.httpAndHTTPS)
    _ = curl.set(handle, CurlOption.writeFunction, unsafeBitCast(onBody, to: UnsafeRawPointer.self))
    _ = curl.set(handle, CurlOption.writeData, box)
    _ = curl.set(handle, CurlOption.headerFunction, unsafeBitCast(onHeader, to: UnsafeRawPointer.self))
    _ = curl.set(handle, CurlOption.headerData, box)
    "push-outbox".withCString { _ = curl.set(handle, CurlOption.userAgent, $0) }
    running[UInt(bitPattern: handle)] = job
    guard curl.multiAdd(multi, handle) == 0 else {
      running[UInt(bitPattern: handle)] = nil
      finish(job, handle, result: .failure(.transport("curl_multi_add_handle failed")), reusable: false)
      return
    }
  }

  /// Completes every transfer libcurl reports done.
  private func reap() {
    var left: Int32 = 0
    while let message = curl.multiInfoRead(multi, &left) {
      var easy: UnsafeMutableRawPointer?
      var code: Int32 = 0
      guard po_curl_msg_read(message, &easy, &code) == CurlOption.messageDone, let handle = easy,
        let job = running.removeValue(forKey: UInt(bitPattern: handle))
      else { continue }
      _ = curl.multiRemove(multi, handle)
      let (result, reusable) = outcome(job, handle, code)
      finish(job, handle, result: result, reusable: reusable)
    }
  }

  /// The answer, and whether the handle's connection is still good for the next request.
  private func outcome(_ job: Job, _ handle: Curl.Handle, _ code: Int32) -> (PostResult, Bool) {
    var status = 0
    _ = curl.info(handle, CurlOption.responseCode, &status)
    let sink = job.sink
    guard code == 0 else {
      // A complete status line and headers with a 2xx mean Braze accepted the batch, even when the
      // body was cut off (reset mid-body, or over the 1 MiB we read): sending it again would
      // duplicate it. What arrived is parsed for `errors`; an unreadable body counts as delivered.
      if sink.headersDone && (200..<300).contains(status) {
        return (.success(HTTPResponse(status: status, body: sink.body, headers: sink.headers)), false)
      }
      let text = curl.message(code)
      return (.failure(code == CurlOption.timedOut ? .timeout(text) : .transport(text)), false)
    }
    return (.success(HTTPResponse(status: status, body: sink.body, headers: sink.headers)), true)
  }

  private func finish(_ job: Job, _ handle: Curl.Handle, result: PostResult, reusable: Bool) {
    curl.slistFree(job.headers)
    job.headers = nil
    Unmanaged.passUnretained(job.sink).release()
    if reusable && idle.count < Self.idleLimit { idle.append(handle) } else { curl.easyCleanup(handle) }
    job.done(result)
  }
}
