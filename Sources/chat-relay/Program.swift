import ChatCLI

/// The `chat-relay` command tree (main.swift runs it; tests parse every help example through it).
enum ChatRelayProgram {
  static let root = Command.group(
    name: "chat-relay",
    abstract: "The reference relay backend: HTTP + WebSocket on loopback, state in one SQLite file.",
    discussion: "The protocol is docs/protocol.md. Start with 'chat-relay user add', then 'chat-relay serve'.",
    subcommands: [
      Command(ServeCommand.self),
      Command.group(
        name: "user", abstract: "Manage the relay's users and their tokens.",
        subcommands: [
          Command(UserAddCommand.self), Command(UserListCommand.self), Command(UserRemoveCommand.self),
          Command(UserTokenCommand.self),
        ],
        examples: ["chat-relay user add --db relay.db --id 42 --name Grace", "chat-relay user list --db relay.db"]),
      Command.group(
        name: "device", abstract: "Manage a user's devices, each with its own token.",
        subcommands: [
          Command(DeviceAddCommand.self), Command(DeviceListCommand.self), Command(DeviceRemoveCommand.self),
        ],
        examples: [
          "chat-relay device add --db relay.db --user 42 --name laptop",
          "chat-relay device list --db relay.db --user 42",
        ]),
      Command.group(
        name: "push", abstract: "Push notifications recorded for offline users.",
        subcommands: [Command(PushListCommand.self)],
        examples: ["chat-relay push list --db relay.db", "chat-relay push list --db relay.db --limit 10 --json"]),
    ],
    examples: [
      "chat-relay user add --db relay.db --id 42 --name Grace", "chat-relay serve --db relay.db --port 8080",
    ]
  )
}
