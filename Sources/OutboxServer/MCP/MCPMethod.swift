import OutboxJSON
import OutboxJSONRPC
import OutboxSupport

/// One method of the Model Context Protocol (`Protocol/README.md`, "MCP"): its name, the eras it
/// exists in, and a handler that reads its params through `MCPCall` and writes its result's members.
///
/// Method types are caseless enums, one per file in `MCP/`. The wire name appears here once, as `name`.
/// MCP's methods are defined by the MCP specification, not by `Protocol/openrpc.json`: that document
/// lists push-outbox's own methods, which `tools/call` serves as tools.
protocol MCPMethod: SendableMetatype {
  static var name: String { get }
  /// The eras the method exists in: `initialize` and `ping` only in the handshake era,
  /// `server/discover` only in the stateless one.
  static var eras: MCPEras { get }
  /// Handles one call. Throw `RPCError` for the JSON-RPC error to answer with.
  static func handle(_ call: inout MCPCall, _ server: Server, _ result: inout MCPResultWriter) throws(RPCError)
}

extension MCPMethod {
  static var eras: MCPEras { [.handshake, .stateless] }
}

/// The eras of the MCP specification a method belongs to.
struct MCPEras: OptionSet {
  let rawValue: UInt8
  /// 2024-11-05 to 2025-11-25: `initialize` settles a version for the process.
  static let handshake = MCPEras(rawValue: 1)
  /// 2026-07-28: every request names its version in `_meta`.
  static let stateless = MCPEras(rawValue: 2)
}

/// The MCP methods push-outbox answers, found by the bytes of a request's method name.
struct MCPTable: Sendable {
  private let methods: [(name: [UInt8], type: any MCPMethod.Type)]

  init(_ methods: [any MCPMethod.Type]) {
    self.methods = methods.map { (Array($0.name.utf8), $0) }
  }

  static let standard = MCPTable([
    Initialize.self, Initialized.self, Ping.self, ServerDiscover.self, ToolsList.self, ToolsCall.self,
  ])

  /// The method `request` names, if it is an MCP method.
  func method(_ request: Request) -> (any MCPMethod.Type)? {
    for method in methods {
      let found = method.name.withUnsafeBufferPointer { request.tape.stringEquals(request.methodNode, bytes: $0) }
      if found { return method.type }
    }
    return nil
  }
}
