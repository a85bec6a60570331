import ChatCLI
import Foundation

let root = Command.group(
  name: "chat-sync",
  abstract: "The headless sync client: fills chats-<id>.db from a chat-relay, sends its outbox.",
  discussion: """
    The relay is --server or $CHAT_SYNC_SERVER; the token $CHAT_SYNC_TOKEN or --token-file \
    (mode 0600), never an argument. The protocol is docs/protocol.md.
    """,
  subcommands: [
    Command(RunCommand.self), Command(SendCommand.self), Command(ConversationsCommand.self),
    Command(HistoryCommand.self),
    Command(ReadCommand.self), Command(RetryCommand.self), Command(DeleteCommand.self), Command(TypingCommand.self),
    Command(StatusCommand.self), Command(SearchCommand.self),
  ]
)

// A closed pipe is an error to report, not a signal that kills the client mid-write.
signal(SIGPIPE, SIG_IGN)

exit(CommandLineTool(root: root, version: Release.version).main(Array(CommandLine.arguments.dropFirst())))
