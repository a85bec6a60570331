import ChatCLI
import ChatStore

/// `chat-sync conversations`: the chat list.
enum ConversationsCommand: ParsableCommand {
  static let name = "conversations"
  static let abstract = "List conversations, newest activity first, with unread counts."

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
        [String($0.contact.id), $0.contact.name, String($0.unreadCount), $0.lastActivityAt, $0.summary]
      }
    ).render()
    options.file.report(
      context,
      json: .object([
        "conversations": .array(
          list.map {
            .object([
              "userId": .int($0.contact.id), "name": .string($0.contact.name), "unread": .int(Int64($0.unreadCount)),
              "lastActivityAt": .string($0.lastActivityAt), "summary": .string($0.summary),
            ])
          })
      ]),
      text: table + "\(list.count) conversation(s)")
  }
}
