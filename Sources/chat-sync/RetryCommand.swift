import ChatCLI
import ChatStore
import ChatSync

/// `chat-sync retry REQUEST_ID`: put a failed request back in line.
enum RetryCommand: ParsableCommand {
  static let name = "retry"
  static let abstract = "Send a failed message again (\"tap to retry\")."

  struct Options: ParsableOptions {
    var file: ClientFile
    var requestText: String
    init(_ o: inout OptionReader) {
      file = ClientFile(&o)
      requestText = o.argument("request-id", help: "The request id (chat-sync status, history).") ?? ""
    }
    var request: Int64 { Int64(requestText) ?? 0 }
    func validate() throws {
      try file.validate()
      guard request > 0 else { throw ValidationError("<request-id>: '\(requestText)' is not a request id (a positive integer)") }
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let repository = try options.file.open(create: false)
    guard try repository.retry(options.request) else {
      throw StoreError(.notFound, "request \(options.request) is not a failed request in \(options.file.target.path)", path: options.file.target.path)
    }
    Nudge.send("outbox", to: options.file.target.path)
    options.file.report(context, json: .object(["requestId": .int(options.request), "status": "PENDING"]), text: "Request \(options.request) is queued again.")
  }
}
