import ChatCLI
import ChatStore

/// `chat-sync history --with ID`: one conversation, oldest first.
enum HistoryCommand: ParsableCommand {
  static let name = "history"
  static let abstract = "Show a conversation: messages, then messages still being sent."
  static let discussion: String? = """
    Pages go back with --before <message id> (the first id of the page shown). An edited \
    message shows its latest text and "edited"; --edits lists its older versions under \
    it. A message deleted for everyone shows as "message deleted".
    """

  static let examples = [
    "chat-sync history --user 42 --with 7",
    "chat-sync history --user 42 --with 7 --before 7337265813504001 --limit 20",
    "chat-sync history --user 42 --with 7 --edits --json",
  ]

  struct Options: ParsableOptions {
    var file: ClientFile
    var with: Int64
    var before: Int64?
    var limit: Int
    var edits: Bool
    init(_ o: inout OptionReader) {
      file = ClientFile(&o)
      with = o.option("--with", valueName: "id", help: "The other user's id.", required: true, parse: Parse.userID) ?? 0
      before = o.option(
        "--before", valueName: "id", help: "Only messages older than this message id.", parse: Parse.userID)
      limit =
        o.option(
          "--limit", valueName: "n", help: "At most this many (default 50).", parse: Parse.count(from: 1, to: 10_000))
        ?? 50
      edits = o.flag("--edits", help: "Also show each edited message's older versions (its edit history).")
    }
    func validate() throws { try file.validate() }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let repository = try options.file.open(create: false)
    let page = try repository.timeline(
      conversation: options.with, before: options.before.map { .message(id: $0) }, limit: options.limit)
    let owner = repository.ownerID
    // Others' text is escaped on a terminal (TerminalText), exact in --json and pipes.
    let shown = { (text: String) in TerminalText.shown(text, terminal: context.stdout.isTerminal) }
    var lines: [String] = []
    var items: [Result.Item] = []
    for item in page.items {
      switch item {
      case .message(let m):
        let arrow = m.fromUserID == owner ? "→" : "←"
        let text = m.deletedAt != nil ? "(message deleted)" : shown(m.content)
        let edited = m.editedAt != nil && m.deletedAt == nil ? " edited" : ""
        lines.append("\(m.createdAt) \(arrow) \(text)  [\(m.status.rawValue)\(edited) #\(m.id)]")
        let history = options.edits && m.version > 0 ? try repository.editHistory(of: m.id) : []
        for old in history { lines.append("    was (version \(old.version), \(old.editedAt)): \(shown(old.content))") }
        items.append(
          .message(
            .init(
              messageId: m.id, fromUserId: m.fromUserID, toUserId: m.toUserID, content: m.content,
              status: m.status.rawValue, createdAt: m.createdAt, version: m.version, editedAt: m.editedAt,
              deletedAt: m.deletedAt,
              edits: options.edits
                ? history.map { .init(version: $0.version, content: $0.content, editedAt: $0.editedAt) } : nil)))
      case .request(let r):
        let state = r.isPermanentlyFailed ? "FAILED: \(shown(r.failReason ?? ""))" : r.status.rawValue
        lines.append("\(r.createdAt) → \(shown(r.content))  [\(state) request \(r.requestID)]")
        items.append(
          .request(
            .init(
              requestId: r.requestID, toUserId: r.toUserID, content: r.content, status: r.status.rawValue,
              createdAt: r.createdAt, failCount: r.failCount, failReason: r.failReason)))
      }
    }
    var older: Int64?
    if case .message(let id)? = page.older { older = id }
    if case .message(let id)? = page.older { lines.append("(older: --before \(id))") }
    try options.file.report(
      context, Result(items: items, olderBefore: older),
      text: lines.isEmpty ? "No messages with user \(options.with)." : lines.joined(separator: "\n"))
  }

  /// `result`: the page, oldest first (messages, then requests still being sent), and
  /// the `--before` of the page before it (null: this is the first page).
  struct Result: CommandResult {
    enum Item: Encodable {
      case message(Message)
      case request(Request)

      func encode(to encoder: any Encoder) throws {
        switch self {
        case .message(let message): try message.encode(to: encoder)
        case .request(let request): try request.encode(to: encoder)
        }
      }
    }
    struct Message: Encodable {
      var messageId: Int64
      var fromUserId: Int64
      var toUserId: Int64
      /// The latest text ("" for a message deleted for everyone).
      var content: String
      var status: String
      var createdAt: String
      /// 0 as sent, one more for each edit.
      var version: Int64
      var editedAt: String?
      var deletedAt: String?
      /// With --edits: the older versions, oldest first.
      var edits: [Version]?
    }
    struct Version: Encodable {
      var version: Int64
      var content: String
      var editedAt: String
    }
    struct Request: Encodable {
      var requestId: Int64
      var toUserId: Int64
      var content: String
      var status: String
      var createdAt: String
      var failCount: Int
      var failReason: String?
    }
    var items: [Item]
    var olderBefore: Int64?

    static var example: Result {
      Result(
        items: [
          .message(
            Message(
              messageId: 7_337_265_813_504_001, fromUserId: 7, toUserId: 42, content: "Friday lunch works for me",
              status: "READ", createdAt: "2026-11-28T09:30:00.000Z", version: 1,
              editedAt: "2026-11-28T09:31:10.000Z", deletedAt: nil,
              edits: [Version(version: 0, content: "Friday works", editedAt: "2026-11-28T09:30:00.000Z")])),
          .request(
            Request(
              requestId: 18, toUserId: 7, content: "Lunch on Friday at noon?", status: "FAILED",
              createdAt: "2026-12-01T12:02:41.180Z", failCount: 3, failReason: "the relay answered 503")),
        ],
        olderBefore: 7_337_265_813_504_001)
    }
  }
}
