import ChatCLI
import ChatStore
import ChatSync

/// `chat-sync read --with ID`: mark a conversation read and send the receipt.
enum ReadCommand: ParsableCommand {
  static let name = "read"
  static let abstract = "Mark a conversation read; the sender sees it read."
  static let discussion: String? =
    "The receipt (the highest id read) is kept in the file until a 'chat-sync run' sends it."

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
    options.file.report(
      context,
      json: .object([
        "conversation": .int(options.with), "readUpTo": highest.map { .int($0) } ?? .null, "runNudged": .bool(nudged),
      ]),
      text: highest.map { "Read up to message \($0)." } ?? "Nothing unread from user \(options.with).")
  }
}
