/// Braze's keys, the extras, and the rules that look at more than one key.
extension PayloadCheck {
  mutating func braze(_ root: PayloadNode) {
    if let ab = root["ab"] {
      if ab.kind != .object {
        report("ab-type", "ab", ab, "ab must be a dictionary, not \(article(ab.typeName))")
      } else if ab.members.isEmpty {
        report("ab-empty", "ab", ab, "ab is empty, so Braze's SDK does not treat this push as Braze's")
      }
      if let att = ab["att"] { attachment(att) }
      if let cd = ab.member("ab_cd") {
        report("content-card-marker", "ab.ab_cd", key: cd, "ab_cd is Braze's Content Card marker, written by Braze")
      }
    }
    if let uri = root["ab_uri"], !(uri.kind == .string && PayloadRequire.isURL(uri.text)) {
      report("ab-uri-url", "ab_uri", uri, "ab_uri must be a URL with a scheme, like myapp://item/3, not \(shown(uri))")
    }
    if let id = root["braze_id"], !(id.kind == .string && !id.text.isEmpty) {
      let message =
        id.kind == .string ? "braze_id is an empty string" : "braze_id must be a string, not \(article(id.typeName))"
      report("braze-id-type", "braze_id", id, message)
    }
    if let bundle = root["Simulator Target Bundle"], !(bundle.kind == .string && Self.isBundleID(bundle.text)) {
      report(
        "simulator-bundle-id", "Simulator Target Bundle", bundle,
        "Simulator Target Bundle must be a bundle identifier like com.example.app, not \(shown(bundle))")
    }
  }

  mutating func attachment(_ att: PayloadNode) {
    guard att.kind == .object else {
      return report("att-type", "ab.att", att, "att must be a dictionary {url, type}, not \(article(att.typeName))")
    }
    if let url = att["url"] {
      if !(url.kind == .string && PayloadRequire.isURL(url.text)) {
        report("att-url", "ab.att.url", url, "att.url must be a URL, not \(shown(url))")
      }
    } else {
      report("att-url", "ab.att.url", att.start, att.start + 1, "att has no url, so nothing is downloaded")
    }
    if let type = att["type"] {
      if !(type.kind == .string && PayloadRules.attachmentTypes.contains(type.text)) {
        report(
          "att-file-type", "ab.att.type", type,
          "att.type must be one of " + PayloadRules.attachmentTypes.joined(separator: ", ") + ", not \(shown(type))")
      }
    } else {
      report("att-file-type", "ab.att.type", att.start, att.start + 1, "att has no type (jpg, png, gif, mp4, …)")
    }
  }

  static let reservedTopKeys: Set<String> = [
    "aps", "ab", "ab_uri", "braze_id", "appboy_uninstall_tracking", "ab_push_fetch_test_triggers_key",
    "Simulator Target Bundle",
  ]

  /// The extras: every other top-level key.
  mutating func extras(_ root: PayloadNode) {
    for m in root.members {
      if let at = Self.liquid(m.value) {
        report(
          "liquid-unrendered", m.key, at,
          "\"\(m.key)\" still holds Liquid ({{ or {%), which Braze renders before sending")
      }
      if m.key == "extra" || !Self.reservedTopKeys.contains(m.key), m.value.kind == .object {
        for inner in m.value.members where inner.key == "ab" || inner.key == "aps" {
          report(
            "extras-braze-keys", m.key + "." + inner.key, key: inner,
            "Braze rejects a message with \"\(inner.key)\" inside its extras; it belongs at the top level")
        }
      }
      if Self.reservedTopKeys.contains(m.key) { continue }
      if m.value.kind == .null {
        report(
          "extra-null", m.key, m.value, "an extra's value is an object, array, string, number or boolean, not null")
      }
    }
  }

  /// The first string at or under `node` that holds `{{` or `{%`.
  static func liquid(_ node: PayloadNode) -> PayloadNode? {
    switch node.kind {
    case .string:
      var previousBrace = false
      for b in node.text.utf8 {
        if previousBrace && (b == UInt8(ascii: "{") || b == UInt8(ascii: "%")) { return node }
        previousBrace = b == UInt8(ascii: "{")
      }
      return nil
    case .array: return node.elements.lazy.compactMap(liquid).first
    case .object: return node.members.lazy.compactMap { liquid($0.value) }.first
    default: return nil
    }
  }

  mutating func crossKeys(_ root: PayloadNode) {
    let aps = root["aps"].flatMap { $0.kind == .object ? $0 : nil }
    let ab = root["ab"].flatMap { $0.kind == .object ? $0 : nil }
    if let att = ab?.member("att"), tree.complete, aps?["mutable-content"] == nil, root["aps"] == nil || aps != nil {
      report(
        "attachment-needs-mutable-content", "ab.att", key: att,
        "an attachment needs \"mutable-content\": 1 in aps, or the service extension never runs",
        fix: addMutableContent(root, aps))
    }
    if let aps, let available = aps.member("content-available"), available.value.integer == 1 {
      let loud = ["alert", "sound", "badge"].filter { aps[$0] != nil }
      if !loud.isEmpty {
        report(
          "silent-with-alert", "aps.content-available", key: available,
          "a background push with \(loud.joined(separator: ", ")): iOS may throttle or drop it; send a silent push without them"
        )
      }
    }
    category(root, aps: aps, ab: ab)
  }

  /// Inserts `"mutable-content": 1` as aps's first member, or an `aps` holding it as the root's first.
  func addMutableContent(_ root: PayloadNode, _ aps: PayloadNode?) -> PayloadFix {
    if let aps {
      let text = aps.members.isEmpty ? "\"mutable-content\": 1" : "\"mutable-content\": 1, "
      let at = aps.members.first?.keyStart ?? aps.start + 1
      return PayloadFix("Add \"mutable-content\": 1 to aps", [.init(start: at, end: at, text: text)])
    }
    let at = root.members.first?.keyStart ?? root.start + 1
    let text = root.members.isEmpty ? "\"aps\": {\"mutable-content\": 1}" : "\"aps\": {\"mutable-content\": 1}, "
    return PayloadFix("Add \"aps\": {\"mutable-content\": 1}", [.init(start: at, end: at, text: text)])
  }

  mutating func category(_ root: PayloadNode, aps: PayloadNode?, ab: PayloadNode?) {
    let category = aps?["category"].flatMap { $0.kind == .string ? $0 : nil }
    let story = ab?["ab_carousel"]
    if let story, story.kind != .null, story.text != "false", category?.text != PayloadRules.pushStoryCategory {
      let at = category ?? story
      report(
        "push-story-category", "aps.category", at,
        "a Push Story (ab.ab_carousel) shows only with the category \(PayloadRules.pushStoryCategory)")
    }
    guard let category else { return }
    if category.text == PayloadRules.pushStoryCategory && story == nil && tree.complete {
      report(
        "push-story-marker", "aps.category", category, "the Push Story category without ab.ab_carousel shows no story")
    }
    let defaults = PayloadRules.defaultCategories
    if category.text.hasPrefix("ab_cat_"), category.text != PayloadRules.pushStoryCategory,
      !defaults.contains(where: { $0.category == category.text })
    {
      let names = (defaults.map(\.category) + [PayloadRules.pushStoryCategory]).joined(separator: ", ")
      report(
        "braze-category-unknown", "aps.category", category, "\"\(category.text)\" is not a Braze category: \(names)")
    }
    guard let expected = defaults.first(where: { $0.category == category.text })?.buttons else { return }
    for (path, buttons) in [("buttons", root["buttons"]), ("ab.buttons", ab?["buttons"])] {
      guard let buttons, buttons.kind == .array else { continue }
      for (n, button) in buttons.elements.enumerated() {
        let id = button["action_id"]
        guard let id, id.kind == .string, !expected.contains(id.text) else { continue }
        report(
          "braze-category-buttons", "\(path)[\(n)].action_id", id,
          "\(category.text) has the buttons \(expected.joined(separator: " and ")), not \(shown(id))")
      }
    }
  }

  /// A reverse-DNS bundle identifier: letters, digits, `-` and `.`, at least two parts, none empty.
  static func isBundleID(_ s: String) -> Bool {
    let parts = s.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count >= 2, s.utf8.count <= 255 else { return false }
    return parts.allSatisfy { part in
      !part.isEmpty
        && part.utf8.allSatisfy { b in
          (b | 0x20 >= 0x61 && b | 0x20 <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x2D
        }
    }
  }
}
