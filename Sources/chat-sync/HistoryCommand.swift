import ChatCLI
import ChatStore

/// `chat-sync history --with ID`: one conversation, oldest first.
enum HistoryCommand: ParsableCommand {
  static let name = "history"
  static let abstract = "Show a conversation: messages, then messages still being sent."
  static let discussion: String? = "Pages go back with --before <message id> (the first id of the page shown)."

  struct Options: ParsableOptions {
    var file: ClientFile
    var with: Int64
    var before: Int64?
    var limit: Int
    init(_ o: inout OptionReader) {
      file = ClientFile(&o)
      with = o.option("--with", valueName: "id", help: "The other user's id.", required: true, parse: Parse.userID) ?? 0
      before = o.option(
        "--before", valueName: "id", help: "Only messages older than this message id.", parse: Parse.userID)
      limit =
        o.option(
          "--limit", valueName: "n", help: "At most this many (default 50).", parse: Parse.count(from: 1, to: 10_000))
        ?? 50
    }
    func validate() throws { try file.validate() }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let repository = try options.file.open(create: false)
    let page = try repository.timeline(
      conversation: options.with, before: options.before.map { .message(id: $0) }, limit: options.limit)
    let owner = repository.ownerID
    var lines: [String] = []
    var items: [JSONValue] = []
    for item in page.items {
      switch item {
      case .message(let m):
        let arrow = m.fromUserID == owner ? "→" : "←"
        lines.append("\(m.createdAt) \(arrow) \(m.content)  [\(m.status.rawValue) #\(m.id)]")
        items.append(
          .object([
            "messageId": .int(m.id), "fromUserId": .int(m.fromUserID), "toUserId": .int(m.toUserID),
            "content": .string(m.content),
            "status": .string(m.status.rawValue), "createdAt": .string(m.createdAt),
          ]))
      case .request(let r):
        let state = r.isPermanentlyFailed ? "FAILED: \(r.failReason ?? "")" : r.status.rawValue
        lines.append("\(r.createdAt) → \(r.content)  [\(state) request \(r.requestID)]")
        items.append(
          .object([
            "requestId": .int(r.requestID), "toUserId": .int(r.toUserID), "content": .string(r.content),
            "status": .string(r.status.rawValue), "createdAt": .string(r.createdAt),
            "failCount": .int(Int64(r.failCount)),
            "failReason": r.failReason.map { .string($0) } ?? .null,
          ]))
      }
    }
    var older: JSONValue = .null
    if case .message(let id)? = page.older { older = .int(id) }
    if case .message(let id)? = page.older { lines.append("(older: --before \(id))") }
    options.file.report(
      context, json: .object(["items": .array(items), "olderBefore": older]),
      text: lines.isEmpty ? "No messages with user \(options.with)." : lines.joined(separator: "\n"))
  }
}
