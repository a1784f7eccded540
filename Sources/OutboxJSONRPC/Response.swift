package import OutboxJSON
public import OutboxSupport

/// One reply as a value: the request's id, and its result or error. The server keeps replies as
/// values until the burst's journal commit is known (`Server.render`), then `ResponseWriter` writes them.
package struct Response {
  package enum Body {
    case result(any JSONEncodable)
    case error(RPCError)
  }

  package var id: RequestID
  package var body: Body

  package init(id: RequestID, _ body: Body) {
    self.id = id
    self.body = body
  }
}

/// The one writer of response bytes: every reply, in every path (general, batch, the save fast
/// path, the commit's refusals, the start-up failure line), is written by these functions.
public enum ResponseWriter {
  /// Appends `response` as one JSON object (no newline).
  package static func append(_ response: Response, to out: inout [UInt8]) {
    switch response.body {
    case .result(let result):
      beginResult(id: response.id, to: &out)
      result.encodeJSON(into: &out)
      endResult(to: &out)
    case .error(let error):
      beginError(id: response.id, to: &out)
      error.encodeJSON(into: &out)
      out.append(UInt8(ascii: "}"))
    }
  }

  /// `{"jsonrpc":"2.0","id":…,"result":`: a result the caller encodes in place follows, then `endResult`.
  package static func beginResult(id: RequestID, to out: inout [UInt8]) {
    out.appendASCII("{\"jsonrpc\":\"2.0\",\"id\":")
    id.encodeJSON(into: &out)
    out.appendASCII(",\"result\":")
  }

  package static func endResult(to out: inout [UInt8]) { out.append(UInt8(ascii: "}")) }

  private static func beginError(id: RequestID, to out: inout [UInt8]) {
    out.appendASCII("{\"jsonrpc\":\"2.0\",\"id\":")
    id.encodeJSON(into: &out)
    out.appendASCII(",\"error\":")
  }

  /// The one-pass form for a non-negative integer id: `body` writes the result through a cursor
  /// into at most `capacity` bytes reserved with the envelope.
  @inlinable @inline(__always)
  public static func appendResult(
    id: UInt64, capacity: Int, to out: inout [UInt8], _ body: (inout ByteCursor) -> Void
  ) {
    ByteCursor.append(to: &out, capacity: capacity + 48) { cursor in
      cursor.put("{\"jsonrpc\":\"2.0\",\"id\":")
      cursor.put(decimal: id)
      cursor.put(",\"result\":")
      body(&cursor)
      cursor.put(UInt8(ascii: "}"))
    }
  }

  /// A whole line for `response`, as a start-up failure (`"id": null`) is written on stdout.
  package static func line(_ response: Response) -> String {
    var out: [UInt8] = []
    append(response, to: &out)
    return String(decoding: out, as: UTF8.self)
  }
}
