import ChatCLI
import ChatStore
import ChatSync

/// `chat-sync delete REQUEST_ID` (a failed request), or `--message ID [--for-everyone]`.
enum DeleteCommand: ParsableCommand {
  static let name = "delete"
  static let abstract = "Delete a failed message that was never sent, or a message for you or for everyone."
  static let discussion: String? = """
    With a request id: only FAILED requests can be deleted, and edits or deletes that \
    failed for good (chat-sync status lists them); a message being sent is never \
    dropped (65), and a request not in the outbox is 66. With --message: the \
    message and its edit history leave this file, erased (no trace in the file, its WAL \
    or the search index), and no sync brings it back. With --for-everyone as well (your \
    own messages, within the relay's edit window): the delete is queued like an edit, and \
    once the relay has it every device of both parties keeps only a tombstone ("message \
    deleted", its id, time and sender). A message not in the file is 66; another user's \
    message for everyone is 65.
    """

  static let examples = [
    "chat-sync delete --user 42 18",
    "chat-sync delete --user 42 --message 10916218899464192",
    "chat-sync delete --db ./chats-42.db --message 10916218899464192 --for-everyone --json",
  ]

  struct Options: ParsableOptions {
    var file: ClientFile
    var requestText: String?
    var message: Int64?
    var forEveryone: Bool
    init(_ o: inout OptionReader) {
      file = ClientFile(&o)
      message = o.option(
        "--message", valueName: "id", help: "Delete this message (its id: chat-sync history --json) instead.",
        parse: Parse.messageID)
      forEveryone = o.flag(
        "--for-everyone", help: "With --message: delete it on every device of both parties (your own messages).")
      requestText = o.argument("request-id", help: "The FAILED request to delete (chat-sync status).", optional: true)
    }
    var request: Int64 { requestText.flatMap { Int64($0) } ?? 0 }
    func validate() throws {
      try file.validate()
      switch (requestText, message) {
      case (nil, nil): throw ValidationError("Missing <request-id> or --message <id>")
      case (_?, _?): throw ValidationError("Give <request-id> or --message <id>, not both")
      case (let text?, nil):
        guard request > 0 else {
          throw ValidationError("<request-id>: '\(text)' is not a request id (a positive integer)")
        }
        if forEveryone { throw ValidationError("--for-everyone goes with --message <id>") }
      case (nil, _?): break
      }
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let repository = try options.file.open(create: false)
    let path = options.file.target.path
    if let message = options.message {
      if options.forEveryone {
        let change = try repository.queueDelete(of: message)
        let nudged = Nudge.send("outbox", to: path)
        try options.file.report(
          context, Result(messageId: message, scope: "everyone", requestId: change.requestID, runNudged: nudged),
          text: "Queued the delete of message \(message) for everyone (request \(change.requestID))"
            + (nudged ? "; 'chat-sync run' is sending it." : "; the next 'chat-sync run' sends it."))
      } else {
        try repository.deleteForMe(message)
        try repository.eraseResidue()
        try options.file.report(
          context, Result(messageId: message, scope: "this-device"),
          text: "Deleted message \(message) from this file.")
      }
      return
    }
    if try repository.dropFailedChange(options.request) {
      try options.file.report(
        context, Result(scope: "change", requestId: options.request),
        text: "Deleted the failed edit or delete \(options.request).")
      return
    }
    if let change = try repository.change(options.request) {
      throw StoreError(
        .badInput,
        "\(path): \(change.kind.rawValue) \(options.request) of message \(change.messageID) is \(change.status.rawValue) and still being sent",
        path: path)
    }
    guard try repository.deleteFailedRequest(options.request) else {
      guard let request = try repository.request(options.request) else {
        throw StoreError(.notFound, "\(path): no request \(options.request) in the outbox", path: path)
      }
      throw StoreError(
        .badInput,
        "\(path): request \(options.request) is \(request.status.rawValue), not FAILED: it is still being sent, and a message being sent is never dropped",
        path: path)
    }
    // Its files go too, unless another message or request has them.
    try repository.sweepMedia()
    try options.file.report(
      context, Result(scope: "request", requestId: options.request), text: "Deleted request \(options.request).")
  }

  /// `result`: what was deleted. `scope`: `request` (a failed request), `change` (an edit
  /// or delete that failed for good), `this-device`
  /// (a message, from this file), or `everyone` (a message: the delete queued, `requestId`
  /// its idempotency key; `runNudged`: a running `chat-sync run` was told).
  struct Result: CommandResult {
    var messageId: Int64?
    var scope: String
    var requestId: Int64?
    var runNudged: Bool?

    static var example: Result {
      Result(messageId: 10_916_218_899_464_192, scope: "everyone", requestId: 32, runNudged: true)
    }
  }
}
