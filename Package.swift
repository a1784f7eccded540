// swift-tools-version:6.0
import Foundation
import PackageDescription

let settings: [SwiftSetting] = [
  .enableUpcomingFeature("ExistentialAny"),
  .enableUpcomingFeature("InternalImportsByDefault"),
  .enableUpcomingFeature("MemberImportVisibility"),
]

// CRC-32C in hardware on x86-64 (the SSE4.2 `crc32` instruction, in every x86-64 CPU since 2008):
// it checks every journal record written and read. Other CPUs use the table-driven code.
#if arch(x86_64)
let crcSettings: [SwiftSetting] = [.unsafeFlags(["-Xcc", "-msse4.2"])]
#else
let crcSettings: [SwiftSetting] = []
#endif

// Release builds leave exclusivity to the compiler's static checks: the runtime's per-access
// bookkeeping cost about 12% of loading a large store and of the request path (perf, see README).
let releaseSettings: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

// The layers, bottom to top. Each is a target, so the compiler keeps their dependencies one-way
// (README, "Layers"): a file cannot use a layer that its target does not list.
let layers: [(name: String, dependencies: [Target.Dependency])] = [
  ("OutboxSupport", []),
  ("OutboxJSON", ["OutboxSupport"]),
  ("OutboxTransport", ["OutboxJSON", "OutboxSupport"]),
  ("OutboxJSONRPC", ["OutboxJSON", "OutboxSupport"]),
  ("OutboxDomain", ["OutboxJSON", "OutboxSupport"]),
  ("OutboxStore", ["OutboxJSON", "OutboxSupport"]),
  ("OutboxNATS", ["OutboxJSON", "OutboxSupport"]),
  ("OutboxFakeBraze", ["OutboxJSON", "OutboxSupport"]),
  ("OutboxDelivery", ["OutboxStore", "OutboxDomain", "OutboxJSON", "OutboxSupport", "CurlShim"]),
  (
    "OutboxServer",
    [
      "OutboxDelivery", "OutboxStore", "OutboxDomain", "OutboxJSONRPC", "OutboxTransport", "OutboxJSON",
      "OutboxSupport",
    ]
  ),
  (
    "OutboxPayloadLSP",
    ["OutboxDomain", "OutboxJSONRPC", "OutboxTransport", "OutboxJSON", "OutboxSupport"]
  ),
  (
    "OutboxFleet",
    [
      "OutboxServer", "OutboxNATS", "OutboxDelivery", "OutboxStore", "OutboxDomain", "OutboxJSONRPC", "OutboxJSON",
      "OutboxSupport",
    ]
  ),
  (
    "OutboxCommandLine",
    [
      "OutboxFleet", "OutboxServer", "OutboxNATS", "OutboxPayloadLSP", "OutboxFakeBraze", "OutboxDelivery",
      "OutboxStore", "OutboxDomain", "OutboxJSONRPC", "OutboxTransport", "OutboxJSON", "OutboxSupport",
    ]
  ),
]
let allLayers: [Target.Dependency] = layers.map { .target(name: $0.name) }

let package = Package(
  name: "PushOutbox",
  platforms: [.macOS(.v15)],
  products: [
    .executable(name: "push-outbox", targets: ["push-outbox"])
  ],
  targets: layers.map { layer in
    .target(
      name: layer.name, dependencies: layer.dependencies,
      exclude: layer.name == "OutboxStore" ? ["README.md"] : [],
      swiftSettings: settings + releaseSettings + (layer.name == "OutboxSupport" ? crcSettings : []),
      plugins: layer.name == "OutboxServer" ? ["EmbedOpenRPC"] : [])
  } + [
    // Three C functions that call libcurl's variadic functions (found with dlsym) by the platform's C rules.
    .target(name: "CurlShim"),
    .plugin(name: "EmbedOpenRPC", capability: .buildTool(), path: "Sources/EmbedOpenRPC"),
    .executableTarget(name: "push-outbox", dependencies: ["OutboxCommandLine"], swiftSettings: settings),
    .testTarget(
      name: "PushOutboxTests",
      dependencies: allLayers + ["push-outbox"],
      swiftSettings: settings
    ),
  ],
  swiftLanguageModes: [.v6]
)

// Fuzz targets (libFuzzer + AddressSanitizer), only when asked: `PUSH_OUTBOX_FUZZ=1`, as
// `bash Tests/fuzz/run` sets it. Normal builds never see them. See Tests/fuzz/README.md.
if ProcessInfo.processInfo.environment["PUSH_OUTBOX_FUZZ"] == "1" {
  package.targets.append(
    .target(
      name: "FuzzSupport", dependencies: allLayers, path: "Tests/fuzz/Sources/FuzzSupport", swiftSettings: settings
    ))
  for name in [
    "FuzzJSON", "FuzzDiff", "FuzzLine", "FuzzRecovery", "FuzzPayload", "FuzzDelivery", "FuzzStoreOps", "FuzzMCP",
    "FuzzNATS", "FuzzHTTPHead", "FuzzLSP",
  ] {
    package.targets.append(
      .executableTarget(
        name: name, dependencies: allLayers + ["FuzzSupport"], path: "Tests/fuzz/Sources/\(name)",
        swiftSettings: settings + [.unsafeFlags(["-parse-as-library"])]))
    package.products.append(.executable(name: name, targets: [name]))
  }
}
