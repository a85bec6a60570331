import ChatCLI
import ChatStore

/// `chat-sync delete REQUEST_ID`: drop a failed request, at the user's word only.
enum DeleteCommand: ParsableCommand {
  static let name = "delete"
  static let abstract = "Delete a failed message that was never sent."
  static let discussion: String? = """
    Only FAILED requests can be deleted: a message being sent is never dropped. A \
    request in another state is refused with 65, one not in the outbox with 66.
    """

  static let examples = [
    "chat-sync delete --user 42 18",
    "chat-sync delete --db ./chats-42.db 18 --json",
  ]

  typealias Options = RequestOptions

  static func run(_ options: Options, in context: CommandContext) throws {
    let repository = try options.file.open(create: false)
    let path = options.file.target.path
    guard try repository.deleteFailedRequest(options.request) else {
      guard let request = try repository.request(options.request) else {
        throw StoreError(.notFound, "\(path): no request \(options.request) in the outbox", path: path)
      }
      throw StoreError(
        .badInput,
        "\(path): request \(options.request) is \(request.status.rawValue), not FAILED: it is still being sent, and a message being sent is never dropped",
        path: path)
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
