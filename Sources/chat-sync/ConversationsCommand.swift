import ChatCLI
import ChatStore

/// `chat-sync conversations`: the chat list.
enum ConversationsCommand: ParsableCommand {
  static let name = "conversations"
  static let abstract = "List conversations, newest activity first, with unread counts."

  static let examples = [
    "chat-sync conversations --user 42",
    "chat-sync conversations --user 42 --limit 10 --json",
  ]

  struct Options: ParsableOptions {
    var file: ClientFile
    var limit: Int
    init(_ o: inout OptionReader) {
      file = ClientFile(&o)
      limit =
        o.option(
          "--limit", valueName: "n", help: "At most this many (default 50).", parse: Parse.count(from: 1, to: 10_000))
        ?? 50
    }
    func validate() throws { try file.validate() }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let list = try options.file.open(create: false).conversations(limit: options.limit)
    let table = Table(
      columns: [
        .init("WITH", alignment: .right), .init("NAME"), .init("UNREAD", alignment: .right), .init("LAST ACTIVITY"),
        .init("LAST"),
      ],
      rows: list.map {
        [
          String($0.contact.id), TerminalText.shown($0.contact.name, terminal: context.stdout.isTerminal),
          String($0.unreadCount), $0.lastActivityAt,
          TerminalText.shown($0.summary, terminal: context.stdout.isTerminal),
        ]
      }
    ).render()
    try options.file.report(
      context,
      Result(
        conversations: list.map {
          .init(
            userId: $0.contact.id, name: $0.contact.name, unread: $0.unreadCount, lastActivityAt: $0.lastActivityAt,
            summary: $0.summary)
        }),
      text: table + "\(list.count) conversation(s)")
  }

  /// `result`: the conversations, newest activity first.
  struct Result: CommandResult {
    struct Conversation: Encodable {
      var userId: Int64
      var name: String
      var unread: Int
      var lastActivityAt: String
      /// The last message's text, shortened.
      var summary: String
    }
    var conversations: [Conversation]

    static var example: Result {
      Result(conversations: [
        Conversation(
          userId: 7, name: "Ada", unread: 2, lastActivityAt: "2026-12-01T12:02:41.180Z",
          summary: "Lunch on Friday at noon?")
      ])
    }
  }
}
