/// A key the checker knows: its path, what it does (the hover), the page it comes from, and for
/// completion the values it takes and the text inserted for its value.
package struct PayloadKey: Sendable {
  package var path: String
  package var about: String
  package var href: String
  /// Allowed string values, for completion (and `interruption-level`'s and `att.type`'s checks).
  package var values: [String] = []
  /// The value inserted with the key (a snippet without placeholders).
  package var insert: String = "\"\""

  /// The parent object's path (`aps` for `aps.badge`; empty at the top level).
  package var parent: String {
    guard let dot = path.lastIndex(of: ".") else { return "" }
    return String(path[..<dot])
  }

  /// The key's own name.
  package var name: String {
    guard let dot = path.lastIndex(of: ".") else { return path }
    return String(path[path.index(after: dot)...])
  }
}

extension PayloadRules {
  private typealias S = PayloadSource

  /// Every key with a hover, in the order completion offers them.
  package static let keys: [PayloadKey] = [
    .init(
      path: "aps", about: "Apple's dictionary: how the system shows and delivers the push.", href: S.apnsKeys,
      insert: "{}"),
    .init(
      path: "aps.alert", about: "The alert: a string (the body) or a dictionary with title, subtitle and body.",
      href: S.apnsKeys, insert: "{}"),
    .init(path: "aps.alert.title", about: "The alert's title, shown in bold.", href: S.apnsKeys),
    .init(path: "aps.alert.subtitle", about: "A line under the title.", href: S.apnsKeys),
    .init(path: "aps.alert.body", about: "The alert's text.", href: S.apnsKeys),
    .init(path: "aps.alert.launch-image", about: "An image file shown while the app launches.", href: S.apnsKeys),
    .init(path: "aps.alert.title-loc-key", about: "A Localizable.strings key for the title.", href: S.apnsKeys),
    .init(
      path: "aps.alert.title-loc-args", about: "Strings for the title's %@ placeholders.", href: S.apnsKeys,
      insert: "[]"),
    .init(path: "aps.alert.subtitle-loc-key", about: "A Localizable.strings key for the subtitle.", href: S.apnsKeys),
    .init(
      path: "aps.alert.subtitle-loc-args", about: "Strings for the subtitle's %@ placeholders.", href: S.apnsKeys,
      insert: "[]"),
    .init(path: "aps.alert.loc-key", about: "A Localizable.strings key for the body.", href: S.apnsKeys),
    .init(path: "aps.alert.loc-args", about: "Strings for the body's %@ placeholders.", href: S.apnsKeys, insert: "[]"),
    .init(
      path: "aps.alert.action-loc-key", about: "A Localizable.strings key for the action button.", href: S.apnsKeys),
    .init(
      path: "aps.badge", about: "The number on the app icon; 0 removes it. An integer, never a string.",
      href: S.apnsKeys, insert: "1"),
    .init(
      path: "aps.sound",
      about: "A sound file in the app bundle (\"default\" for the system sound), or a critical-alert dictionary.",
      href: S.apnsKeys, values: ["default"]),
    .init(
      path: "aps.sound.critical", about: "1 makes this a critical alert (needs Apple's entitlement).", href: S.apnsKeys,
      insert: "1"),
    .init(path: "aps.sound.name", about: "The sound file, or \"default\".", href: S.apnsKeys, values: ["default"]),
    .init(
      path: "aps.sound.volume", about: "The critical alert's volume, 0 (silent) to 1 (full).", href: S.apnsKeys,
      insert: "1"),
    .init(
      path: "aps.thread-id", about: "Groups notifications in Notification Center; a string.", href: S.apnsKeys),
    .init(
      path: "aps.category",
      about: "The notification type: selects its actions and content extension (UNNotificationExtensionCategory).",
      href: S.apnsKeys,
      values: defaultCategories.map(\.category) + [pushStoryCategory]),
    .init(
      path: "aps.content-available",
      about: "1 makes a background (silent) push that wakes the app; then no alert, sound or badge.",
      href: S.apnsBackground, insert: "1"),
    .init(
      path: "aps.mutable-content",
      about: "1 lets the notification service extension change the content, e.g. download ab.att.",
      href: S.apnsService, insert: "1"),
    .init(
      path: "aps.target-content-id", about: "The window to bring forward when the notification is opened.",
      href: S.apnsKeys),
    .init(
      path: "aps.interruption-level",
      about: "How much the notification interrupts: passive, active (default), time-sensitive or critical.",
      href: S.apnsKeys, values: interruptionLevels),
    .init(
      path: "aps.relevance-score", about: "0 to 1: which notification the summary puts first.", href: S.apnsKeys,
      insert: "0.5"),
    .init(
      path: "aps.filter-criteria", about: "The Focus filter the notification is matched against.", href: S.apnsKeys),
    .init(
      path: "aps.stale-date", about: "Live Activity: when the content is out of date (UNIX time).", href: S.apnsKeys,
      insert: "0"),
    .init(path: "aps.content-state", about: "Live Activity: the new dynamic content.", href: S.apnsKeys, insert: "{}"),
    .init(
      path: "aps.timestamp", about: "Live Activity: when this update was sent (UNIX time).", href: S.apnsKeys,
      insert: "0"),
    .init(
      path: "aps.event", about: "Live Activity: start, update or end.", href: S.apnsKeys,
      values: ["start", "update", "end"]),
    .init(
      path: "aps.dismissal-date", about: "Live Activity: when an ended activity leaves the Lock Screen.",
      href: S.apnsKeys, insert: "0"),
    .init(path: "aps.attributes-type", about: "Live Activity: the attributes type that starts it.", href: S.apnsKeys),
    .init(
      path: "aps.attributes", about: "Live Activity: the attributes that start it.", href: S.apnsKeys, insert: "{}"),
    .init(
      path: "ab", about: "Braze's dictionary. A non-empty ab is what makes Braze's SDK treat the push as Braze's.",
      href: S.brazePushUtils, insert: "{}"),
    .init(
      path: "ab.att", about: "A rich-notification attachment {url, type}, downloaded by the service extension.",
      href: S.brazeRich, insert: "{}"),
    .init(path: "ab.att.url", about: "Where the service extension downloads the attachment from.", href: S.brazeRich),
    .init(
      path: "ab.att.type", about: "The attachment's file type, used as the file's suffix.", href: S.brazeApple,
      values: attachmentTypes),
    .init(
      path: "ab.ab_carousel", about: "Marks a Push Story; needs the category ab_cat_push_story_v2.",
      href: S.brazeStories,
      insert: "{}"),
    .init(
      path: "ab.ab_cd", about: "Set by Braze when the push carries a Content Card.", href: S.brazePushUtils,
      insert: "{}"),
    .init(path: "ab_uri", about: "The deep link or web URL opened when the notification is tapped.", href: S.brazeLogs),
    .init(path: "braze_id", about: "The user's Braze id, for logging with /users/track.", href: S.brazeLogging),
    .init(
      path: "appboy_uninstall_tracking",
      about: "Braze's internal uninstall-tracking push; the SDK records nothing for it.",
      href: S.brazePushUtils, insert: "true"),
    .init(
      path: "Simulator Target Bundle",
      about: "The app a simulator delivers this file to when it is dropped on it (xcrun simctl push).",
      href: S.simulator, insert: "\"com.example.app\""),
  ]

  package static let keyByPath: [String: PayloadKey] = Dictionary(
    keys.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })

  /// The rules about the key at `path`.
  package static func rules(forKey path: String) -> [PayloadRule] {
    table.filter { $0.path == path }
  }

  /// The hover for the key at `path`, in Markdown; nil for a key the table does not know.
  package static func hover(forKey path: String) -> String? {
    guard let key = keyByPath[path] else { return nil }
    var lines = ["**\(key.name)**: \(key.about)"]
    let rules = rules(forKey: path)
    if !key.values.isEmpty { lines.append("Values: " + key.values.map { "`\($0)`" }.joined(separator: ", ")) }
    for rule in rules { lines.append("- `\(rule.code)` (\(rule.severity.name)): \(rule.summary)") }
    lines.append("[Documentation](\(key.href))")
    return lines.joined(separator: "\n\n")
  }
}
