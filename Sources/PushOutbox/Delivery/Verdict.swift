/// What one `/users/track` answer means for the items of its batch (README "Deliver to Braze").
enum Verdict: Equatable {
  /// 2xx: every item is delivered except these, which Braze named in `errors`.
  case delivered(dead: [UInt64: String])
  /// 429, 5xx, timeouts and connection errors: retry after at least `afterMs`, if Braze said.
  case retry(afterMs: Int?, reason: String)
  /// 400 (or another 4xx about the body): split the batch until the bad object is alone.
  case split(reason: String)
  /// 401, 403, 404 (and redirects): the configuration is wrong; keep everything and pause.
  case stop(reason: String)

  static func of(_ result: Result<HTTPResponse, DeliveryFailure>, _ batch: TrackBatch, nowMs: Int64) -> Verdict {
    let response: HTTPResponse
    switch result {
    case .failure(let failure): return .retry(afterMs: nil, reason: failure.message)
    case .success(let answer): response = answer
    }
    let body = try? JSONReader.parse(response.body, maxDepth: 64)
    let message = body?["message"]?.stringValue.map { ": " + $0 } ?? ""
    switch response.status {
    case 200..<300:
      return .delivered(dead: deadObjects(body, batch))
    case 429, 500..<600:
      return .retry(afterMs: waitMs(response.headers, nowMs: nowMs), reason: "HTTP \(response.status)\(message)")
    case 401, 403, 404, 300..<400:
      return .stop(reason: "HTTP \(response.status)\(message)")
    default:
      return .split(reason: body?["message"]?.stringValue ?? "http_\(response.status)")
    }
  }

  /// The objects a 2xx's `errors` names by `input_array` and `index`, with Braze's message.
  private static func deadObjects(_ body: JSONValue?, _ batch: TrackBatch) -> [UInt64: String] {
    guard case .array(let errors)? = body?["errors"] else { return [:] }
    var dead: [UInt64: String] = [:]
    for error in errors {
      guard let array = error["input_array"]?.stringValue, let index = error["index"]?.intValue,
        let seq = batch.seq(array: array, index: Int(clamping: index))
      else { continue }
      dead[seq] = error["type"]?.stringValue ?? error["message"]?.stringValue ?? "refused"
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
