import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxSupport

/// One MCP request as its handler sees it: the request, its params, and the era it is answered in.
///
/// A request whose `params._meta` names `io.modelcontextprotocol/protocolVersion` is a stateless-era
/// request (2026-07-28, basic/index "Per-request protocol fields"): it must also carry
/// `io.modelcontextprotocol/clientCapabilities` (else `-32602`) and name a version served here (else
/// `-32022`). Any other request belongs to the handshake era, in the version `initialize` settled.
struct MCPCall {
  let request: Request
  var params: Params
  let era: MCPEra
  /// The node of `params._meta`, when it is an object.
  let meta: Int?
  /// Set by a handler whose answer comes when long work ends (`tools/call` of a long method).
  var long: LongStart?

  init(_ request: Request, session: MCPSession) throws(RPCError) {
    self.request = request
    params = try Params(request)
    if request.mayHaveDuplicateKeys, let path = Self.duplicateKeyPath(request) {
      throw .invalidParams(path: path, code: "duplicate_key", "the key at \(path) appears more than once")
    }
    meta = params.node("_meta", "object")
    var fields = meta.map { Params(tape: request.tape, node: $0) }
    if let version = fields?.node(MCPVersion.versionKey) {
      era = MCPEra(version: try Self.statelessVersion(request.tape, version, &fields!), isStateless: true)
    } else {
      era = MCPEra(version: session.version, isStateless: false)
    }
    try check()
  }

  /// The first key repeated in params, outside a `tools/call`'s `arguments`: those are the tool's
  /// params, checked as a JSON-RPC call of its method checks them (a tool error, not a protocol error).
  private static func duplicateKeyPath(_ request: Request) -> String? {
    let tape = request.tape
    guard request.paramsNode >= 0, tape.isObject(request.paramsNode) else { return nil }
    if tape.hasDuplicateKey(request.paramsNode) { return tape.firstDuplicateKey(request.paramsNode) }
    for (k, v) in tape.members(request.paramsNode) where !tape.stringEquals(k, "arguments") {
      if let path = tape.duplicateKeyPath(v, path: tape.string(k)) { return path }
    }
    return nil
  }

  /// The version a stateless-era request names, after checking its required `_meta` fields.
  private static func statelessVersion(
    _ tape: JSONTape, _ node: Int, _ fields: inout Params
  ) throws(RPCError)
    -> String
  {
    var issues = Issues()
    let prefix = "_meta."
    if !tape.isString(node) {
      issues.error(prefix + "\(MCPVersion.versionKey)", "wrong_type", "the protocol version must be a string")
    }
    if fields.node(MCPVersion.capabilitiesKey, "object") == nil {
      let key = prefix + "\(MCPVersion.capabilitiesKey)"
      issues.error(key, "missing", "\(key) (an object) is required on every request that names a protocol version")
    }
    if !issues.errors.isEmpty { throw .invalidParams(issues.errors) }
    let version = tape.string(node)
    guard MCPVersion.stateless.contains(where: { sameText($0, version) }) else {
      throw RPCError(
        .unsupportedProtocolVersion, "Unsupported protocol version",
        data: .object([
          JSONMember("supported", .array(MCPVersion.stateless.map(JSONValue.string))),
          JSONMember("requested", .string(version)),
        ]))
    }
    return version
  }

  /// `_meta.progressToken`, MCP's opt-in to `notifications/progress`: a string or an integer.
  mutating func progressToken() -> JSONValue? {
    guard let meta else { return nil }
    let tape = request.tape
    var fields = Params(tape: tape, node: meta)
    guard let n = fields.node("progressToken") else { return nil }
    if tape.isString(n) || tape.isIntegerText(n) { return tape.value(n) }
    let path = "_meta.progressToken"
    params.issues.error(path, "wrong_type", "\(path) must be a string or an integer, not \(tape.typeName(n))")
    return nil
  }

  /// Throws `-32602` when reading params found a problem (a wrong type; unknown keys are allowed:
  /// MCP's params are open).
  mutating func check() throws(RPCError) {
    if !params.issues.errors.isEmpty { throw .invalidParams(params.issues.errors) }
  }
}

extension ErrorCode {
  /// MCP's `UnsupportedProtocolVersionError` (2026-07-28): `data` is `{supported, requested}`.
  static let unsupportedProtocolVersion = ErrorCode(rawValue: -32022)
}

/// Writes the members of one MCP result object; in the stateless era, `resultType` first and
/// `_meta.io.modelcontextprotocol/serverInfo` last (2026-07-28, basic/index).
struct MCPResultWriter {
  private(set) var bytes: [UInt8] = [UInt8(ascii: "{")]
  private let era: MCPEra

  init(era: MCPEra) {
    self.era = era
    if era.has(.statelessResult) { member("resultType", .string("complete")) }
  }

  mutating func member(_ key: String, _ value: JSONValue) {
    open(key)
    value.encodeJSON(into: &bytes)
  }

  /// A member whose value is JSON text already written.
  mutating func member(_ key: String, json: [UInt8]) {
    open(key)
    bytes.append(contentsOf: json)
  }

  private mutating func open(_ key: String) {
    if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
    bytes.appendJSONString(key)
    bytes.append(UInt8(ascii: ":"))
  }

  mutating func close() -> [UInt8] {
    if era.has(.statelessResult) {
      member("_meta", .object([JSONMember(MCPVersion.serverInfoKey, Server.mcpServerInfo)]))
    }
    bytes.append(UInt8(ascii: "}"))
    return bytes
  }
}
