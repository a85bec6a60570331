import ChatCLI
import ChatStore
import ChatSync

/// `chat-sync read --with ID`: mark a conversation read and send the receipt.
enum ReadCommand: ParsableCommand {
  static let name = "read"
  static let abstract = "Mark a conversation read; the sender sees it read."
  static let discussion: String? =
    "The receipt (the highest id read) is kept in the file until a 'chat-sync run' sends it."

  static let examples = [
    "chat-sync read --user 42 --with 7",
    "chat-sync read --user 42 --with 7 --json",
  ]

  struct Options: ParsableOptions {
    var file: ClientFile
    var with: Int64
    init(_ o: inout OptionReader) {
      file = ClientFile(&o)
      with = o.option("--with", valueName: "id", help: "The other user's id.", required: true, parse: Parse.userID) ?? 0
    }
    func validate() throws { try file.validate() }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let repository = try options.file.open(create: false)
    let highest = try repository.markRead(conversation: options.with)
    if let highest { try repository.queueReadReceipt(conversation: options.with, upTo: highest) }
    let nudged = highest != nil && Nudge.send("read", to: options.file.target.path)
    try options.file.report(
      context, Result(conversation: options.with, readUpTo: highest, runNudged: nudged),
      text: highest.map { "Read up to message \($0)." } ?? "Nothing unread from user \(options.with).")
  }

  /// `result`: the highest message id marked read (null: nothing was unread), and
  /// whether a running `chat-sync run` was told to send the receipt.
  struct Result: CommandResult {
    var conversation: Int64
    var readUpTo: Int64?
    var runNudged: Bool

    static var example: Result { Result(conversation: 7, readUpTo: 7_337_265_813_504_001, runNudged: true) }
  }
}
