import OutboxJSON
import OutboxSupport

/// The tools: the wire methods `Protocol/openrpc.json` gives `x-mcp-annotations` (all but
/// `rpc.discover` and the two cancel notifications), by their wire names, described by the
/// embedded document (so nothing is written twice):
/// - `description`: the method's `summary`, a blank line and its `description`;
/// - `inputSchema`: an object of its params (each param's schema, with the param's description),
///   `required` as the params say, no other members (the method refuses unknown params);
/// - `outputSchema`: its result schema, with `"type": "object"` at the root where the schema has
///   no `type` (every result is an object; MCP before 2026-07-28 requires it);
/// - `annotations`: its `x-mcp-annotations`.
/// Schemas are made self-contained by `SchemaInliner`. `Tests/mcp/tool_catalog.py` builds the
/// same list independently from the same file.
struct ToolCatalog {
  struct Tool {
    var name: String
    var description: String
    var inputSchema: JSONValue
    var outputSchema: JSONValue
    var annotations: JSONValue?
  }

  let tools: [Tool]

  /// The embedded document, read once.
  static let document: JSONValue = (try? JSONReader.parse(Array(openRPCDocument.utf8), maxDepth: 1000)) ?? .null

  /// The tools of `table`, in the document's method order.
  init(table: MethodTable, document: JSONValue = ToolCatalog.document) {
    let inliner = SchemaInliner(document: document)
    let methods = document["methods"]?.arrayValue ?? []
    tools = methods.compactMap { method in
      guard let name = method["name"]?.stringValue, Self.isTool(name, in: table) else { return nil }
      return Self.tool(name, method, inliner)
    }
  }

  /// True for the wire methods served as tools.
  static func isTool(_ name: String, in table: MethodTable) -> Bool {
    annotated.contains { sameText($0, name) } && table.names.contains { sameText($0, name) }
  }

  /// The methods the document marks as tools.
  private static let annotated: [String] = (document["methods"]?.arrayValue ?? []).compactMap { method in
    method["x-mcp-annotations"] == nil ? nil : method["name"]?.stringValue
  }

  private static func tool(_ name: String, _ method: JSONValue, _ inliner: SchemaInliner) -> Tool {
    var text = method["summary"]?.stringValue ?? ""
    if let more = method["description"]?.stringValue, !more.isEmpty { text += text.isEmpty ? more : "\n\n" + more }
    return Tool(
      name: name, description: text, inputSchema: inputSchema(method, inliner),
      outputSchema: outputSchema(method, inliner), annotations: method["x-mcp-annotations"])
  }

  private static func inputSchema(_ method: JSONValue, _ inliner: SchemaInliner) -> JSONValue {
    var defs: [JSONMember] = []
    var properties: [JSONMember] = []
    var required: [JSONValue] = []
    for param in method["params"]?.arrayValue ?? [] {
      guard let name = param["name"]?.stringValue else { continue }
      var schema = inliner.inline(param["schema"] ?? .object([]), defs: &defs)
      if let description = param["description"], case .object(var members) = schema {
        members.removeAll { sameText($0.key, "description") }
        members.append(JSONMember("description", description))
        schema = .object(members)
      }
      properties.append(JSONMember(name, schema))
      if param["required"]?.boolValue == true { required.append(.string(name)) }
    }
    var members = [JSONMember("type", .string("object")), JSONMember("properties", .object(properties))]
    if !required.isEmpty { members.append(JSONMember("required", .array(required))) }
    members.append(JSONMember("additionalProperties", .bool(false)))
    if !defs.isEmpty { members.append(JSONMember("$defs", .object(defs))) }
    return .object(members)
  }

  private static func outputSchema(_ method: JSONValue, _ inliner: SchemaInliner) -> JSONValue {
    var defs: [JSONMember] = []
    let schema = inliner.inline(method["result"]?["schema"] ?? .object([]), defs: &defs)
    var members = schema.objectValue ?? []
    if members["type"] == nil { members.insert(JSONMember("type", .string("object")), at: 0) }
    if !defs.isEmpty { members.append(JSONMember("$defs", .object(defs))) }
    return .object(members)
  }

  /// The `tools` array as `era` shows it: without `annotations` before 2025-03-26, without
  /// `outputSchema` before 2025-06-18.
  func json(for era: MCPEra) -> JSONValue {
    .array(
      tools.map { tool in
        var members = [
          JSONMember("name", .string(tool.name)), JSONMember("description", .string(tool.description)),
          JSONMember("inputSchema", tool.inputSchema),
        ]
        if era.has(.structuredContent) { members.append(JSONMember("outputSchema", tool.outputSchema)) }
        if era.has(.toolAnnotations), let annotations = tool.annotations {
          members.append(JSONMember("annotations", annotations))
        }
        return .object(members)
      })
  }
}
