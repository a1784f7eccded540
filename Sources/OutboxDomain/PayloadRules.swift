/// One rule of the payload checker: its stable code, severity, the JSON path it is about, what it
/// says, the page it comes from (`codeDescription.href` in LSP) and a line for hovers.
///
/// `PayloadRules.table` is the one home of every rule: `PayloadCheck` reports only codes in it (a
/// finding whose row is removed is dropped), the LSP server takes severities, links and hovers from
/// it, and `parsePayload` returns the same findings in `diagnostics`.
package struct PayloadRule: Sendable {
  package var code: String
  package var severity: PayloadSeverity
  /// Dotted path from the root (`aps.badge`); `*` stands for any key; empty for the whole document.
  package var path: String
  /// What the rule asks for, in one sentence.
  package var summary: String
  package var href: String
}

/// The documents the rules cite.
package enum PayloadSource {
  static let rfc8259 = "https://www.rfc-editor.org/rfc/rfc8259"
  static let apnsKeys =
    "https://developer.apple.com/documentation/usernotifications/generating-a-remote-notification#Payload-key-reference"
  static let apnsSend =
    "https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns"
  static let apnsBackground =
    "https://developer.apple.com/documentation/usernotifications/pushing-background-updates-to-your-app"
  static let apnsService =
    "https://developer.apple.com/documentation/usernotifications/modifying-content-in-newly-delivered-notifications"
  static let simulator = "https://developer.apple.com/documentation/xcode-release-notes/xcode-11_4-release-notes"
  static let brazeApple = "https://www.braze.com/docs/api/objects_filters/messaging/apple_object/"
  static let brazeKeyValue =
    "https://www.braze.com/docs/user_guide/personalization_and_dynamic_content/key_value_pairs/"
  static let brazeRich =
    "https://www.braze.com/docs/developer_guide/platform_integration_guides/ios/push_notifications/customization/rich_notifications/"
  static let brazeErrors = "https://www.braze.com/docs/api/errors/"
  static let brazePushUtils =
    "https://github.com/braze-inc/braze-swift-sdk/blob/main/Sources/BrazeKitCompat/AppboyKit/ABKPushUtils.m"
  static let brazeStories =
    "https://www.braze.com/docs/user_guide/message_building_by_channel/push/advanced_push_options/push_stories/"
  static let brazeLogs = "https://www.braze.com/docs/developer_guide/sdk_integration/reading_verbose_logs/"
  static let brazeLogging = "https://www.braze.com/docs/developer_guide/push_notifications/logging_message_data/"
}

package enum PayloadRules {
  private typealias S = PayloadSource

  /// APNs: "any individual payload you send to APNs cannot exceed a size of 4096 bytes" (`key_value_pairs.md`).
  package static let apnsLimit = 4096
  /// Braze: "the total number of bytes in your alert string, extra object and other optional
  /// parameters should not exceed 1912" (`apple_object.md`; `400 Apple Push Length Exceeded`, `errors.md`).
  package static let brazeComposerLimit = 1912
  /// The file types Braze sends as `asset_file_type` (`apple_object.md`).
  package static let attachmentTypes = ["aif", "gif", "jpg", "m4a", "mp3", "mp4", "png", "wav"]
  /// `aps.interruption-level` (Apple's payload key reference).
  package static let interruptionLevels = ["passive", "active", "time-sensitive", "critical"]
  /// Braze's default categories and their buttons (`apple_object.md`), and Push Story's
  /// (`braze-swift-sdk:Examples/Swift/Sources/PushNotificationsContentExtension/Info.plist`).
  package static let defaultCategories: [(category: String, buttons: [String])] = [
    ("ab_cat_accept_decline", ["ab_pb_accept", "ab_pb_decline"]), ("ab_cat_yes_no", ["ab_pb_yes", "ab_pb_no"]),
    ("ab_cat_confirm_cancel", ["ab_pb_confirm", "ab_pb_cancel"]), ("ab_cat_more", ["ab_pb_more"]),
  ]
  package static let pushStoryCategory = "ab_cat_push_story_v2"

  package static let table: [PayloadRule] = [
    // The document.
    .init(
      code: "json-syntax", severity: .error, path: "", summary: "the text must be JSON (RFC 8259)", href: S.rfc8259),
    .init(
      code: "invalid-utf8", severity: .error, path: "", summary: "the text must be UTF-8 (RFC 8259 §8.1)",
      href: S.rfc8259),
    .init(
      code: "lone-surrogate", severity: .error, path: "",
      summary: "a \\u escape of half a surrogate pair needs its other half, or the payload is not UTF-8",
      href: S.rfc8259),
    .init(
      code: "duplicate-key", severity: .warning, path: "*",
      summary: "a key appears once per object; parsers keep one of the copies and drop the other", href: S.rfc8259),
    .init(
      code: "not-an-object", severity: .error, path: "", summary: "a push payload is a JSON object", href: S.apnsKeys),
    .init(
      code: "document-too-large", severity: .error, path: "",
      summary: "documents over the server's size cap are not checked", href: S.apnsSend),
    .init(
      code: "apns-size", severity: .error, path: "",
      summary: "APNs refuses a payload over 4,096 bytes, measured as compact UTF-8 JSON", href: S.brazeKeyValue),
    .init(
      code: "braze-size", severity: .information, path: "",
      summary: "Braze's composer refuses more than 1,912 bytes of alert, extras and options", href: S.brazeApple),
    .init(
      code: "no-aps", severity: .warning, path: "aps", summary: "an APNs payload has an aps dictionary",
      href: S.apnsKeys),
    // aps.
    .init(code: "aps-type", severity: .error, path: "aps", summary: "aps is a dictionary", href: S.apnsKeys),
    .init(
      code: "aps-unknown-key", severity: .warning, path: "aps.*",
      summary: "aps holds only Apple's keys; custom data goes outside aps", href: S.apnsKeys),
    .init(
      code: "alert-type", severity: .error, path: "aps.alert", summary: "alert is a string or a dictionary",
      href: S.apnsKeys),
    .init(
      code: "alert-child-type", severity: .error, path: "aps.alert.*",
      summary: "alert's texts and keys are strings, its -args arrays of strings", href: S.apnsKeys),
    .init(
      code: "alert-unknown-key", severity: .warning, path: "aps.alert.*", summary: "alert holds only Apple's keys",
      href: S.apnsKeys),
    .init(code: "badge-type", severity: .error, path: "aps.badge", summary: "badge is an integer", href: S.apnsKeys),
    .init(
      code: "sound-type", severity: .error, path: "aps.sound",
      summary: "sound is a file name, or a critical-alert dictionary", href: S.apnsKeys),
    .init(
      code: "sound-child", severity: .error, path: "aps.sound.*",
      summary: "a sound dictionary has critical 1, a name string and a volume 0...1", href: S.apnsKeys),
    .init(
      code: "content-available-value", severity: .error, path: "aps.content-available",
      summary: "content-available is the number 1 (not \"1\", not true)", href: S.apnsBackground),
    .init(
      code: "mutable-content-value", severity: .error, path: "aps.mutable-content",
      summary: "mutable-content is the number 1 (not \"1\", not true)", href: S.apnsService),
    .init(
      code: "category-type", severity: .error, path: "aps.category", summary: "category is a string", href: S.apnsKeys),
    .init(
      code: "thread-id-type", severity: .error, path: "aps.thread-id", summary: "thread-id is a string",
      href: S.apnsKeys),
    .init(
      code: "interruption-level-value", severity: .error, path: "aps.interruption-level",
      summary: "interruption-level is passive, active, time-sensitive or critical", href: S.apnsKeys),
    .init(
      code: "relevance-score-range", severity: .error, path: "aps.relevance-score",
      summary: "relevance-score is a number from 0 to 1", href: S.apnsKeys),
    .init(
      code: "target-content-id-type", severity: .error, path: "aps.target-content-id",
      summary: "target-content-id is a string", href: S.apnsKeys),
    // Braze.
    .init(
      code: "ab-type", severity: .error, path: "ab", summary: "ab is Braze's dictionary", href: S.brazePushUtils),
    .init(
      code: "ab-empty", severity: .warning, path: "ab",
      summary: "an empty ab makes Braze's SDK treat the push as not Braze's", href: S.brazePushUtils),
    .init(
      code: "att-type", severity: .error, path: "ab.att", summary: "att is a dictionary with url and type",
      href: S.brazeRich),
    .init(
      code: "att-url", severity: .error, path: "ab.att.url", summary: "att.url is the attachment's URL",
      href: S.brazeRich),
    .init(
      code: "att-file-type", severity: .error, path: "ab.att.type",
      summary: "att.type is a type Braze sends: aif, gif, jpg, m4a, mp3, mp4, png or wav", href: S.brazeApple),
    .init(
      code: "ab-uri-url", severity: .error, path: "ab_uri", summary: "ab_uri is a URL with a scheme",
      href: S.brazeLogs),
    .init(
      code: "push-story-category", severity: .error, path: "aps.category",
      summary: "a Push Story (ab.ab_carousel) needs the category ab_cat_push_story_v2", href: S.brazeStories),
    .init(
      code: "push-story-marker", severity: .warning, path: "aps.category",
      summary: "the Push Story category without ab.ab_carousel shows no story", href: S.brazeStories),
    .init(
      code: "content-card-marker", severity: .information, path: "ab.ab_cd",
      summary: "ab_cd is set by Braze when a push carries a Content Card; the SDK reads it", href: S.brazePushUtils),
    .init(
      code: "extras-braze-keys", severity: .error, path: "*",
      summary: "Braze rejects messages with ab or aps inside the extras", href: S.brazeApple),
    .init(
      code: "extra-null", severity: .warning, path: "*",
      summary: "extras are objects, arrays, strings, numbers or booleans; null is none of them", href: S.brazeKeyValue),
    .init(
      code: "braze-id-type", severity: .warning, path: "braze_id", summary: "braze_id is a non-empty string",
      href: S.brazeLogging),
    .init(
      code: "liquid-unrendered", severity: .information, path: "*",
      summary: "{{ or {% is Liquid that Braze renders before sending; a device would see it as is",
      href: S.brazeKeyValue),
    // Across keys.
    .init(
      code: "attachment-needs-mutable-content", severity: .error, path: "ab.att",
      summary: "an attachment is downloaded by the service extension, which runs only with mutable-content: 1",
      href: S.brazeRich),
    .init(
      code: "silent-with-alert", severity: .warning, path: "aps.content-available",
      summary: "a background (silent) push has no alert, sound or badge", href: S.apnsBackground),
    .init(
      code: "braze-category-unknown", severity: .warning, path: "aps.category",
      summary: "ab_cat_ is Braze's prefix; this is none of Braze's categories", href: S.brazeApple),
    .init(
      code: "braze-category-buttons", severity: .error, path: "buttons",
      summary: "a Braze default category comes with its own buttons (action_id ab_pb_…)", href: S.brazeApple),
    .init(
      code: "simulator-bundle-id", severity: .error, path: "Simulator Target Bundle",
      summary: "Simulator Target Bundle is the app's bundle identifier, like com.example.app", href: S.simulator),
  ]

  package static let byCode: [String: PayloadRule] = Dictionary(
    table.map { ($0.code, $0) }, uniquingKeysWith: { a, _ in a })
}
