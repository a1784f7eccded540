// swift-tools-version:6.0
import PackageDescription

let settings: [SwiftSetting] = [
  .enableUpcomingFeature("ExistentialAny"),
  .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
  name: "PushOutbox",
  platforms: [.macOS(.v15)],
  products: [
    .executable(name: "push-outbox", targets: ["push-outbox"])
  ],
  targets: [
    .target(name: "PushOutbox", swiftSettings: settings, plugins: ["EmbedOpenRPC"]),
    .plugin(name: "EmbedOpenRPC", capability: .buildTool(), path: "Sources/EmbedOpenRPC"),
    .executableTarget(name: "push-outbox", dependencies: ["PushOutbox"], swiftSettings: settings),
    .testTarget(
      name: "PushOutboxTests",
      dependencies: ["PushOutbox", "push-outbox"],
      swiftSettings: settings
    ),
  ],
  swiftLanguageModes: [.v6]
)
