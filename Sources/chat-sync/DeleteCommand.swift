import ChatCLI
import ChatStore

/// `chat-sync delete REQUEST_ID`: drop a failed request, at the user's word only.
enum DeleteCommand: ParsableCommand {
  static let name = "delete"
  static let abstract = "Delete a failed message that was never sent."
  static let discussion: String? = "Only FAILED requests can be deleted: a message being sent is never dropped."

  static let examples = [
    "chat-sync delete --user 42 18",
    "chat-sync delete --db ./chats-42.db 18 --json",
  ]

  typealias Options = RequestOptions

  static func run(_ options: Options, in context: CommandContext) throws {
    let repository = try options.file.open(create: false)
    guard try repository.deleteFailedRequest(options.request) else {
      throw StoreError(
        .notFound, "request \(options.request) is not a failed request in \(options.file.target.path)",
        path: options.file.target.path)
    }
    try options.file.report(
      context, Result(requestId: options.request, deleted: true),
      text: "Deleted request \(options.request).")
  }

  /// `result`: the request deleted.
  struct Result: CommandResult {
    var requestId: Int64
    var deleted: Bool

    static var example: Result { Result(requestId: 18, deleted: true) }
  }
}
