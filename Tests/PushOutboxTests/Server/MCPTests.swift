import Testing

@testable import OutboxJSON
@testable import OutboxServer

/// The MCP layer in process: the schema inliner on a document made for it, and the tool list
/// against the method table. Over the real binary: `Tests/mcp` (the official SDK) and the
/// `mcp-*.txt` transcripts.
@Suite struct MCPTests {
  @Test func theInlinerResolvesReferencesAndKeepsRecursionInDefs() throws {
    let document = try JSONReader.parse(
      ##"""
      {"components":{"schemas":{
        "Tree":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/components/schemas/Tree"}},
          "name":{"$ref":"#/components/schemas/Name"}}},
        "Name":{"type":"string","enum":[{"$ref":"#/components/schemas/Tree"}]}}}}
      """##)
    let inliner = SchemaInliner(document: document)
    var defs: [JSONMember] = []
    let name = inliner.inline(try JSONReader.parse(##"{"$ref":"#/components/schemas/Name"}"##), defs: &defs)
    #expect(name == (try JSONReader.parse(##"{"type":"string","enum":[{"$ref":"#/components/schemas/Tree"}]}"##)))
    #expect(defs.isEmpty)  // a reference inside `enum` is data, not a reference
    let tree = inliner.inline(try JSONReader.parse(##"{"$ref":"#/components/schemas/Tree"}"##), defs: &defs)
    #expect(tree == (try JSONReader.parse(##"{"$ref":"#/$defs/Tree"}"##)))
    let body = try JSONReader.parse(
      ##"""
      {"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/Tree"}},
        "name":{"type":"string","enum":[{"$ref":"#/components/schemas/Tree"}]}}}
      """##)
    #expect(defs.count == 1 && defs["Tree"] == body)
  }

  @Test func theToolsAreTheMethodTableButTheProtocolMethods() {
    let names = ToolCatalog(table: .standard).tools.map(\.name)
    let protocolMethods = [
      Discover.name, CancelRequest.name, CancelledNotification.name, Shutdown.name, Exit.name,
    ]
    #expect(names == MethodTable.standard.names.filter { !protocolMethods.contains($0) })
    #expect(names.count == 13)
  }

  @Test func aToolCallAnswersAsTheMethod() throws {
    let plain = try InProcessServer().request("saveCustomEvent", ##"{"name":"a","properties":{"n":1}}"##)
    let tool = try InProcessServer().request(
      "tools/call", ##"{"name":"saveCustomEvent","arguments":{"name":"a","properties":{"n":1}}}"##)
    #expect(tool["result"]?["structuredContent"] == plain["result"])
    #expect(tool["result"]?["isError"] == .bool(false))
  }
}
