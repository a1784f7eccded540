/// Paths into a JSON value as error reports name them: `properties.step`, `tags[2]`.

/// Joins a parent path and a member key: `properties` + `step` → `properties.step`.
package func joinPath(_ parent: String, _ key: String) -> String {
  parent.isEmpty ? key : parent + "." + key
}

/// Joins a parent path and an array index: `tags` + 2 → `tags[2]`.
package func joinPath(_ parent: String, index: Int) -> String {
  parent + "[" + String(index) + "]"
}
