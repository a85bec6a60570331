// swift-tools-version:6.0
import PackageDescription

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
    // glibc's <malloc.h> (mallopt), part of libc itself.
    .systemLibrary(name: "CMalloc"),
    // Thumbnails: libvips, loaded with dlopen on first use (docs/decisions/0019).
    .target(name: "CThumbnail"),
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
    .target(name: "ChatStore", dependencies: ["CSQLite", "CCrypto", "CMalloc", "CThumbnail", "Migrations"]),
    .target(name: "ChatMaintenance", dependencies: ["ChatStore", "CZstd"]),
    .target(name: "ChatCLI", dependencies: ["ChatStore"]),
    // The relay protocol's messages, users, events and errors (docs/protocol.md) as Codable
    // types, shared by the relay and the client: the one place the wire's field names live.
    .target(name: "ChatProtocol"),
    // The libwebsockets glue of the relay and the client: the context callback and wake
    // handle both use, and the client context (one service thread) with its HTTP client and
    // WebSockets, used by chat-sync and by the relay's push webhook.
    .target(name: "LWSSupport", dependencies: ["ChatStore", "CWebSockets"]),
    // The chat-specific command pieces chatdb and chat-sync share (search's options, result
    // and text); ChatCLI itself holds nothing chat-specific.
    .target(name: "ChatCommands", dependencies: ["ChatCLI", "ChatStore"]),
    // The reference backend: Store/ is its durable state (relay.db), Server/ its HTTP and
    // WebSocket side on libwebsockets, Relay the protocol between them.
    .target(name: "ChatRelay", dependencies: ["ChatStore", "ChatProtocol", "LWSSupport", "CCrypto", "CWebSockets"]),
    // The sync client: Transport/ is HTTP and the WebSocket to the relay as values, the real
    // ones on LWSSupport's client, Engine/ the outbox, real-time events and cursor sync over
    // ChatRepository.
    .target(name: "ChatSync", dependencies: ["ChatStore", "ChatProtocol", "LWSSupport"]),

    // MARK: - Executables
    .executableTarget(name: "chatdb", dependencies: ["ChatMaintenance", "ChatStore", "ChatCLI", "ChatCommands"]),
    .executableTarget(name: "chat-relay", dependencies: ["ChatRelay", "ChatProtocol", "ChatStore", "ChatCLI"]),
    .executableTarget(
      name: "chat-sync",
      dependencies: ["ChatSync", "ChatProtocol", "ChatStore", "ChatCLI", "ChatCommands", "ChatMaintenance"]),
    // In-process timings for scripts/bench; not shipped to users.
    .executableTarget(name: "chatdb-bench", dependencies: ["ChatStore", "ChatCLI"]),
    // The sync client's drivers for scripts/bench.d/sync.sh (many engines in one process);
    // not shipped to users.
    .executableTarget(name: "chat-sync-bench", dependencies: ["ChatSync", "ChatStore", "ChatCLI"]),

    // MARK: - Tests
    // What every test target shares: the trait that keeps blocking suites off the cooperative pool.
    .target(name: "TestSupport", path: "Tests/TestSupport"),
    .testTarget(name: "ChatStoreTests", dependencies: ["TestSupport", "ChatStore"]),
    .testTarget(name: "ChatMaintenanceTests", dependencies: ["TestSupport", "ChatMaintenance", "ChatStore"]),
    .testTarget(name: "ChatCLITests", dependencies: ["TestSupport", "ChatCLI", "ChatStore"]),
    .testTarget(name: "ChatProtocolTests", dependencies: ["TestSupport", "ChatProtocol"]),
    .testTarget(
      name: "ChatRelayTests", dependencies: ["TestSupport", "ChatRelay", "ChatProtocol", "ChatStore", "chat-relay"],
      exclude: ["interop"]),
    .testTarget(
      name: "ChatSyncTests",
      dependencies: [
        "TestSupport", "ChatSync", "ChatProtocol", "ChatStore", "ChatRelay", "chat-relay", "chat-sync", "chatdb",
      ]),
    // The help-example test parses the three programs' command trees.
    .testTarget(
      name: "chatdbTests", dependencies: ["TestSupport", "chatdb", "chat-sync", "chat-relay", "ChatStore", "ChatCLI"]),
  ]
)
