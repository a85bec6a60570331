import ChatCLI
import Foundation

let root = Command.group(
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
      ]),
    Command.group(
      name: "push", abstract: "Push notifications recorded for offline users.",
      subcommands: [Command(PushListCommand.self)]),
  ]
)

// A closed pipe is an error to report, not a signal that kills the relay.
signal(SIGPIPE, SIG_IGN)

exit(CommandLineTool(root: root, version: Release.version).main(Array(CommandLine.arguments.dropFirst())))
