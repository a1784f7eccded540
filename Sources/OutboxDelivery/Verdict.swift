import OutboxJSON

/// What one `/users/track` answer means for the items of its batch (README "Deliver to Braze").
package enum Verdict: Equatable {
  /// 2xx: every item is delivered except these, which Braze named in `errors`.
  case delivered(dead: [UInt64: String])
  /// 408, 409, 425, 429, 5xx, protocol faults, timeouts and connection errors: retry after at least
  /// `afterMs`, if Braze said.
  case retry(afterMs: Int?, reason: String)
  /// 400, 413, 422 (the body is bad): split the batch until the bad object is alone.
  case split(reason: String)
  /// 401, 403, 404 and other 4xx: the configuration is wrong; keep everything and pause.
  case stop(reason: String)

  /// How a status code is handled, written once: 2xx delivered; 400, 413 and 422 (the body is bad)
  /// split; 408, 409, 425, 429 and 5xx retry; 401, 403, 404 and every other 4xx stop (a configuration
  /// fault); 1xx, 3xx and anything past 599 are a protocol fault, retried and reported.
  package enum Handling: Equatable { case delivered, split, retry, stop, protocolFault }

  static func handling(of status: Int) -> Handling {
    switch status {
    case 200..<300: .delivered
    case 400, 413, 422: .split
    case 408, 409, 425, 429, 500..<600: .retry
    case 400..<500: .stop
    default: .protocolFault
    }
  }

  /// What an answer means; every text from the server is cleaned (`ServerText`) with `key`.
  package static func of(
    _ result: Result<HTTPResponse, DeliveryFailure>, _ batch: TrackBatch, nowMs: Int64, key: Secret? = nil
  ) -> Verdict {
    let response: HTTPResponse
    switch result {
    case .failure(let failure): return .retry(afterMs: nil, reason: ServerText.clean(failure.message, key: key))
    case .success(let answer): response = answer
    }
    let body = try? JSONReader.parse(response.body, maxDepth: 64)
    let said = body?["message"]?.stringValue.map { ServerText.clean($0, key: key) }
    let reason = "HTTP \(response.status)" + (said.map { ": " + $0 } ?? "")
    switch handling(of: response.status) {
    case .delivered: return .delivered(dead: deadObjects(body, batch, key: key))
    case .retry: return .retry(afterMs: waitMs(response.headers, nowMs: nowMs), reason: reason)
    case .stop: return .stop(reason: reason)
    case .split: return .split(reason: said ?? "http_\(response.status)")
    case .protocolFault: return .retry(afterMs: nil, reason: "protocol fault: " + reason)
    }
  }

  /// The objects a 2xx's `errors` names by `input_array` and `index`, with Braze's message.
  private static func deadObjects(_ body: JSONValue?, _ batch: TrackBatch, key: Secret?) -> [UInt64: String] {
    guard case .array(let errors)? = body?["errors"] else { return [:] }
    var dead: [UInt64: String] = [:]
    for error in errors {
      guard let array = error["input_array"]?.stringValue, let index = error["index"]?.intValue,
        let seq = batch.seq(array: array, index: Int(clamping: index))
      else { continue }
      dead[seq] = ServerText.clean(error["type"]?.stringValue ?? error["message"]?.stringValue ?? "refused", key: key)
    }
    return dead
  }

  /// `Retry-After` (seconds) or `X-RateLimit-Reset` (epoch seconds), as a wait from now, at most an hour.
  static func waitMs(_ headers: [String: String], nowMs: Int64) -> Int? {
    if let text = headers["retry-after"], let seconds = Double(text), seconds.isFinite, seconds >= 0 {
      return Int(min(seconds, 3600) * 1000)
    }
    if let text = headers["x-ratelimit-reset"], let epoch = Double(text), epoch.isFinite {
      let wait = epoch * 1000 - Double(nowMs)
      return wait > 0 ? Int(min(wait, 3_600_000)) : 0
    }
    return nil
  }
}
