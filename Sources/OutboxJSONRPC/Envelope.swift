package import OutboxJSON

/// A valid JSON-RPC 2.0 request or notification, pointing into the tape of its line.
///
/// Valid only while the line it was read from is (during `Server.handle(line:)`), so not
/// `Sendable`, like its `JSONTape`. A class, so passing it around costs one reference count
/// instead of copying its parts.
package final class Request {
  /// nil for a notification (no `id` member at all); `.null` for an explicit `"id": null`.
  package let id: RequestID?
  /// The method name: one of the registered names' own strings when it is one, else made from its bytes.
  package let method: String
  /// The tape of the line, and the nodes of `method` and `params` (absent: -1) in it.
  package let tape: JSONTape
  package let methodNode: Int
  package let paramsNode: Int
  /// Set when the line held a duplicate key below the envelope; params are then searched.
  package let mayHaveDuplicateKeys: Bool

  /// Also for a request made from nodes of another's tape: MCP's `tools/call` runs its `arguments`
  /// as the params of the method its `name` names.
  package init(
    id: RequestID?, tape: JSONTape, methodNode: Int, paramsNode: Int, mayHaveDuplicateKeys: Bool, known: KnownMethods
  ) {
    self.id = id
    self.tape = tape
    self.methodNode = methodNode
    self.paramsNode = paramsNode
    self.mayHaveDuplicateKeys = mayHaveDuplicateKeys
    method = known.name(tape, methodNode) ?? tape.string(methodNode)
  }

  package var isNotification: Bool { id == nil }

  /// The `params` member as a tree, for callers that want one.
  package var params: JSONValue? { paramsNode < 0 ? nil : tape.value(paramsNode) }
}

/// What one request-shaped value read from the wire turned out to be.
package enum Envelope {
  case request(Request)
  /// Not a valid request. Answered with `-32600` (or the given error), echoing the id when readable.
  case invalid(id: RequestID?, RPCError)
  /// A response object (`result` or `error`, no `method`). This server sends no requests,
  /// so such input is logged and ignored; replying could loop between two peers.
  case response

  /// Classifies node `n` of `tape` (a whole line, or one member of a batch).
  static func classify(_ tape: JSONTape, _ n: Int, known: KnownMethods) -> Envelope {
    guard tape.isObject(n) else {
      return .invalid(id: .null, .invalidRequest("a request must be a JSON object"))
    }
    if tape.hasDuplicateKey(n), let key = tape.firstDuplicateKey(n) {
      return .invalid(id: .null, .invalidRequest("duplicate member \"\(key)\" in the request object"))
    }
    var idNode = -1, methodNode = -1, paramsNode = -1, versionNode = -1
    var sawResult = false
    for (k, v) in tape.members(n) {
      switch tape.rawContents(k).count {
      case 2 where tape.stringEquals(k, "id"): idNode = v
      case 6 where tape.stringEquals(k, "method"): methodNode = v
      case 6 where tape.stringEquals(k, "params"): paramsNode = v
      case 7 where tape.stringEquals(k, "jsonrpc"): versionNode = v
      case 5 where tape.stringEquals(k, "error"), 6 where tape.stringEquals(k, "result"): sawResult = true
      default:
        if tape.isEscaped(k) { return classifySlowly(tape, n, known: known) }
      }
    }
    return finish(
      tape, id: idNode, method: methodNode, params: paramsNode, version: versionNode, sawResult: sawResult, known: known
    )
  }

  /// An envelope with an escaped key: compare decoded keys (e.g. `"\u0069d"` is `id`).
  private static func classifySlowly(_ tape: JSONTape, _ n: Int, known: KnownMethods) -> Envelope {
    var idNode = -1, methodNode = -1, paramsNode = -1, versionNode = -1
    var sawResult = false
    for (k, v) in tape.members(n) {
      if tape.stringEquals(k, "id") { idNode = v }
      if tape.stringEquals(k, "method") { methodNode = v }
      if tape.stringEquals(k, "params") { paramsNode = v }
      if tape.stringEquals(k, "jsonrpc") { versionNode = v }
      if tape.stringEquals(k, "result") || tape.stringEquals(k, "error") { sawResult = true }
    }
    return finish(
      tape, id: idNode, method: methodNode, params: paramsNode, version: versionNode, sawResult: sawResult, known: known
    )
  }

  private static func finish(
    _ tape: JSONTape, id idNode: Int, method methodNode: Int, params paramsNode: Int, version versionNode: Int,
    sawResult: Bool, known: KnownMethods
  ) -> Envelope {
    var id: RequestID? = nil
    if idNode >= 0 {
      guard let valid = RequestID(tape, idNode) else {
        return .invalid(id: .null, .invalidRequest("id must be a string, a number or null"))
      }
      id = valid
    }
    if methodNode < 0, sawResult { return .response }
    guard versionNode >= 0, tape.isString(versionNode), tape.stringEquals(versionNode, "2.0") else {
      return .invalid(id: id ?? .null, .invalidRequest("jsonrpc must be exactly \"2.0\""))
    }
    guard methodNode >= 0, tape.isString(methodNode) else {
      return .invalid(id: id ?? .null, .invalidRequest("method must be a string"))
    }
    var paramsNode = paramsNode
    // A deliberate leniency: `"params": null` is taken as no params, for every method (Emacs
    // jsonrpc.el and pygls send it for a call without arguments; JSON-RPC 2.0 says omit it).
    if paramsNode >= 0, tape.isNull(paramsNode) { paramsNode = -1 }
    if paramsNode >= 0, !tape.isObject(paramsNode), !tape.isArray(paramsNode) {
      return .invalid(id: id ?? .null, .invalidRequest("params must be an object or an array when present"))
    }
    return .request(
      Request(
        id: id, tape: tape, methodNode: methodNode, paramsNode: paramsNode, mayHaveDuplicateKeys: tape.sawDuplicateKey,
        known: known))
  }
}

/// One line read for the request path: a single request-shaped value or a batch of them.
package enum RequestLine {
  case single(Envelope)
  case batch([Envelope])

  /// Reads `line`: `-32700` for text that is not JSON, `-32600` for a batch over `maxBatch`
  /// (refused while reading, before the rest is parsed).
  package static func read(
    _ line: UnsafeBufferPointer<UInt8>, maxDepth: Int, maxBatch: Int, known: KnownMethods
  ) throws(RPCError) -> RequestLine {
    let tape: JSONTape
    do {
      tape = try JSONTape(line, maxDepth: maxDepth, maxBatch: maxBatch)
    } catch {
      if let limit = error.batchLimit {
        throw .invalidRequest("batch of more than \(limit) requests exceeds --max-batch \(limit)")
      }
      throw .parseError(error.reason, offset: error.offset)
    }
    guard tape.isArray(tape.root) else { return .single(Envelope.classify(tape, tape.root, known: known)) }
    var members: [Envelope] = []
    members.reserveCapacity(tape.childCount(tape.root))
    for (_, v) in tape.elements(tape.root) { members.append(Envelope.classify(tape, v, known: known)) }
    return .batch(members)
  }
}

/// The method names a server serves, so that a request's `method` is the server's own string (no
/// allocation per request) when it names one of them.
package struct KnownMethods: Sendable {
  private let names: [String]
  private let bytes: [[UInt8]]
  package init(_ names: [String]) {
    self.names = names
    bytes = names.map { Array($0.utf8) }
  }

  /// The known name equal (by code points) to string node `n`, as the table's own string.
  package func name(_ tape: JSONTape, _ n: Int) -> String? {
    for (k, name) in bytes.enumerated() where name.withUnsafeBufferPointer({ tape.stringEquals(n, bytes: $0) }) {
      return names[k]
    }
    return nil
  }
}
