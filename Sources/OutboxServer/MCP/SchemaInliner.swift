import OutboxJSON
import OutboxSupport

/// Makes the OpenRPC document's schemas self-contained, for MCP's `inputSchema` and `outputSchema`:
/// every `$ref` to `#/components/schemas/X` is replaced by X itself, except when X refers back to
/// itself (nested event properties and attributes): those go into the schema's own `$defs` and
/// are referred to as `#/$defs/X`. The schemas use no keyword that differs between draft-07 and
/// JSON Schema 2020-12, MCP's default dialect.
struct SchemaInliner {
  private let components: [JSONMember]
  /// Components that can reach themselves through their references.
  private let recursive: Set<String>
  private static let prefix = "#/components/schemas/"
  /// Members whose values are data, not schemas: their `$ref` keys are not references.
  private static let dataKeys: Set<String> = ["examples", "enum", "const", "default"]

  init(document: JSONValue) {
    components = document["components"]?["schemas"]?.objectValue ?? []
    var graph: [String: Set<String>] = [:]
    for member in components { graph[member.key] = Self.references(member.value) }
    recursive = Set(graph.keys.filter { Self.reaches($0, from: $0, graph) })
  }

  /// `schema` with every reference resolved; recursive components are added to `defs`.
  func inline(_ schema: JSONValue, defs: inout [JSONMember]) -> JSONValue {
    switch schema {
    case .array(let items):
      return .array(items.map { inline($0, defs: &defs) })
    case .object(let members):
      if let name = Self.componentName(schema), let target = components[name] {
        guard recursive.contains(name) else { return inline(target, defs: &defs) }
        if defs[name] == nil {
          defs.append(JSONMember(name, .null))  // placeholder: stops the recursion
          let body = inline(target, defs: &defs)
          if let n = defs.firstIndex(where: { sameText($0.key, name) }) { defs[n].value = body }
        }
        return .object([JSONMember("$ref", .string("#/$defs/" + name))])
      }
      return .object(
        members.map { JSONMember($0.key, Self.dataKeys.contains($0.key) ? $0.value : inline($0.value, defs: &defs)) })
    default:
      return schema
    }
  }

  /// The component a `{"$ref": "#/components/schemas/X"}` names.
  private static func componentName(_ schema: JSONValue) -> String? {
    guard let ref = schema["$ref"]?.stringValue, ref.hasPrefix(prefix) else { return nil }
    return String(ref.dropFirst(prefix.count))
  }

  private static func references(_ schema: JSONValue) -> Set<String> {
    switch schema {
    case .array(let items): return items.reduce(into: []) { $0.formUnion(references($1)) }
    case .object(let members):
      if let name = componentName(schema) { return [name] }
      return members.reduce(into: []) { if !dataKeys.contains($1.key) { $0.formUnion(references($1.value)) } }
    default: return []
    }
  }

  private static func reaches(_ target: String, from start: String, _ graph: [String: Set<String>]) -> Bool {
    var seen: Set<String> = []
    var stack = Array(graph[start] ?? [])
    while let next = stack.popLast() {
      if next == target { return true }
      if seen.insert(next).inserted { stack += graph[next] ?? [] }
    }
    return false
  }
}
