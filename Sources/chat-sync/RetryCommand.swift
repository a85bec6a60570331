import ChatCLI
import ChatStore
import ChatSync

/// `chat-sync retry REQUEST_ID`: put a failed request back in line.
enum RetryCommand: ParsableCommand {
  static let name = "retry"
  static let abstract = "Send a failed message again (\"tap to retry\")."

  static let examples = [
    "chat-sync retry --user 42 18",
    "chat-sync retry --db ./chats-42.db 18 --json",
  ]

  typealias Options = RequestOptions

  static func run(_ options: Options, in context: CommandContext) throws {
    let repository = try options.file.open(create: false)
    guard try repository.retry(options.request) else {
      throw StoreError(
        .notFound, "request \(options.request) is not a failed request in \(options.file.target.path)",
        path: options.file.target.path)
    }
    Nudge.send("outbox", to: options.file.target.path)
    try options.file.report(
      context, Result(requestId: options.request, status: "PENDING"),
      text: "Request \(options.request) is queued again.")
  }

  /// `result`: the request queued again, and its new status.
  struct Result: CommandResult {
    var requestId: Int64
    var status: String

    static var example: Result { Result(requestId: 18, status: "PENDING") }
  }
}
