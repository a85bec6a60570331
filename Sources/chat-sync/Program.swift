import ChatCLI

/// The `chat-sync` command tree (main.swift runs it; tests parse every help example through it).
enum ChatSyncProgram {
  static let root = Command.group(
    name: "chat-sync",
    abstract: "The headless sync client: fills chats-<id>.db from a chat-relay, sends its outbox.",
    discussion: """
      The relay is --server or $CHAT_SYNC_SERVER; the token $CHAT_SYNC_TOKEN or --token-file \
      (mode 0600), never an argument. The protocol is docs/protocol.md.
      """,
    subcommands: [
      Command(RunCommand.self), Command(SendCommand.self), Command(FetchCommand.self), Command(EditCommand.self),
      Command(ConversationsCommand.self),
      Command(HistoryCommand.self),
      Command(ReadCommand.self), Command(RetryCommand.self), Command(DeleteCommand.self), Command(TypingCommand.self),
      Command(StatusCommand.self), Command(SearchCommand.self),
    ],
    examples: [
      "chat-sync run --user 42 --server http://127.0.0.1:8080", "chat-sync send --user 42 --to 7 'See you at noon'",
      "chat-sync status --user 42",
    ]
  )
}
