import ChatCLI
import ChatStore
import ChatSync

/// `chat-sync edit --message ID TEXT`: queue an edit of one of the owner's messages.
enum EditCommand: ParsableCommand {
  static let name = "edit"
  static let abstract = "Queue an edit of a message you sent; a running 'chat-sync run' sends it at once."
  static let discussion: String? = """
    The edit waits in the file's outbox (MessageChanges) until the relay numbers it, \
    whatever happens to the network; then every device of both parties shows the new \
    text, and the older ones stay as the message's edit history (history --edits). Only \
    the sender edits, within the relay's edit window (serve --edit-window, 48 h by \
    default): a later edit fails for good with the relay's reason (status shows it). A \
    message not in the file is 66; another user's, or one deleted for everyone, is 65.
    """

  static let examples = [
    "chat-sync edit --user 42 --message 10916218899464192 'Lunch on Friday at one?'",
    "chat-sync edit --db ./chats-42.db --message 10916218899464192 --json 'See you at one'",
  ]

  struct Options: ParsableOptions {
    var file: ClientFile
    var message: Int64
    var text: String
    init(_ o: inout OptionReader) {
      file = ClientFile(&o)
      message =
        o.option(
          "--message", valueName: "id", help: "The message's id (chat-sync history --json).", required: true,
          parse: Parse.messageID) ?? 0
      text = o.argument("text", help: "The new text (1 to 65,536 bytes of UTF-8).") ?? ""
    }
    func validate() throws {
      try file.validate()
      let bytes = text.utf8.count
      guard bytes >= 1, bytes <= ChatRepository.maximumContentBytes else {
        throw ValidationError("The text must be 1 to 65,536 bytes; it has \(bytes)")
      }
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let repository = try options.file.open(create: false)
    let change = try repository.queueEdit(of: options.message, content: options.text)
    let nudged = Nudge.send("outbox", to: options.file.target.path)
    try options.file.report(
      context,
      Result(
        requestId: change.requestID, messageId: change.messageID, status: change.status.rawValue, runNudged: nudged),
      text: "Queued edit \(change.requestID) of message \(change.messageID)"
        + (nudged ? "; 'chat-sync run' is sending it." : "; the next 'chat-sync run' sends it."))
  }

  /// `result`: the edit queued in the outbox, and whether a running `chat-sync run` was told.
  struct Result: CommandResult {
    var requestId: Int64
    var messageId: Int64
    var status: String
    var runNudged: Bool

    static var example: Result {
      Result(requestId: 31, messageId: 10_916_218_899_464_192, status: "PENDING", runNudged: true)
    }
  }
}
