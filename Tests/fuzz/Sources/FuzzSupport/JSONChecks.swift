package import OutboxCommandLine
package import OutboxDelivery
package import OutboxDomain
package import OutboxJSON
package import OutboxJSONRPC
package import OutboxServer
package import OutboxStore
package import OutboxSupport
package import OutboxTransport

/// Whether any object in the tree has two members whose keys have the same UTF-8 bytes.
package func hasDuplicateKey(_ value: JSONValue) -> Bool {
  switch value {
  case .array(let items): return items.contains(where: hasDuplicateKey)
  case .object(let members):
    var seen = Set<[UInt8]>()
    for member in members where !seen.insert(Array(member.key.utf8)).inserted { return true }
    return members.contains { hasDuplicateKey($0.value) }
  default: return false
  }
}
