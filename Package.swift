// swift-tools-version:6.0
import PackageDescription

// Import, export and generate run per-row loops over class-held buffers; the dynamic
// exclusivity checks cost about 7% there (measured with perf). Release builds only;
// debug builds and tests keep them.
let hotLoops: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
  name: "chatdb",
  products: [
    .library(name: "ChatStore", targets: ["ChatStore"]),
    .executable(name: "chatdb", targets: ["chatdb"]),
    .executable(name: "chat-relay", targets: ["chat-relay"]),
    .executable(name: "chat-sync", targets: ["chat-sync"]),
  ],
  targets: [
    // MARK: - C shims (system libraries from Debian)
    .systemLibrary(
      name: "CSQLite",
      pkgConfig: "sqlite3",
      providers: [.apt(["libsqlite3-dev"])]
    ),
    .systemLibrary(
      name: "CZstd",
      pkgConfig: "libzstd",
      providers: [.apt(["libzstd-dev"])]
    ),
    .systemLibrary(
      name: "CCrypto",
      pkgConfig: "libcrypto",
      providers: [.apt(["libssl-dev"])]
    ),
    .systemLibrary(
      name: "CWebSockets",
      pkgConfig: "libwebsockets",
      providers: [.apt(["libwebsockets-dev"])]
    ),

    // MARK: - The schema's history, embedded into the binary at build time
    // `Migrations/*.sql` are inputs of a build command; SwiftPM re-plans when a file is
    // added or removed in a target folder and re-runs the command when one is edited,
    // so the embedded set can never be stale.
    .target(name: "Migrations", path: "Migrations", plugins: ["EmbedMigrations"]),
    .plugin(name: "EmbedMigrations", capability: .buildTool()),

    // MARK: - Core and features
    .target(name: "ChatStore", dependencies: ["CSQLite", "CCrypto", "Migrations"], swiftSettings: hotLoops),
    .target(name: "ChatMaintenance", dependencies: ["ChatStore", "CZstd"], swiftSettings: hotLoops),
    .target(name: "ChatCLI", dependencies: ["ChatStore"]),
    // The chat-specific command pieces chatdb and chat-sync share (search's options, result
    // and text); ChatCLI itself holds nothing chat-specific.
    .target(name: "ChatCommands", dependencies: ["ChatCLI", "ChatStore"]),
    // The reference backend: Store/ is its durable state (relay.db), Server/ its HTTP and
    // WebSocket side on libwebsockets, Relay the protocol between them.
    .target(name: "ChatRelay", dependencies: ["ChatStore", "CCrypto", "CWebSockets"]),
    // The sync client: Transport/ is HTTP and the WebSocket on libwebsockets' client (one
    // context and service thread), Engine/ the outbox, real-time events and cursor sync over
    // ChatRepository.
    .target(name: "ChatSync", dependencies: ["ChatStore", "CWebSockets"]),

    // MARK: - Executables
    .executableTarget(name: "chatdb", dependencies: ["ChatMaintenance", "ChatStore", "ChatCLI", "ChatCommands"]),
    .executableTarget(name: "chat-relay", dependencies: ["ChatRelay", "ChatStore", "ChatCLI"]),
    .executableTarget(name: "chat-sync", dependencies: ["ChatSync", "ChatStore", "ChatCLI", "ChatCommands"]),
    // In-process timings for scripts/bench; not shipped to users.
    .executableTarget(name: "chatdb-bench", dependencies: ["ChatStore", "ChatCLI"]),
    // The sync client's drivers for scripts/bench.d/sync.sh (many engines in one process);
    // not shipped to users.
    .executableTarget(name: "chat-sync-bench", dependencies: ["ChatSync", "ChatStore", "ChatCLI"]),

    // MARK: - Tests
    .testTarget(name: "ChatStoreTests", dependencies: ["ChatStore"]),
    .testTarget(name: "ChatMaintenanceTests", dependencies: ["ChatMaintenance", "ChatStore"]),
    .testTarget(name: "ChatCLITests", dependencies: ["ChatCLI", "ChatStore"]),
    .testTarget(name: "ChatRelayTests", dependencies: ["ChatRelay", "ChatStore", "chat-relay"], exclude: ["interop"]),
    .testTarget(
      name: "ChatSyncTests", dependencies: ["ChatSync", "ChatStore", "ChatRelay", "chat-relay", "chat-sync", "chatdb"]),
    // The help-example test parses the three programs' command trees.
    .testTarget(name: "chatdbTests", dependencies: ["chatdb", "chat-sync", "chat-relay", "ChatStore", "ChatCLI"]),
  ]
)
