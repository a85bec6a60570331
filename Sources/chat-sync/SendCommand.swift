import ChatCLI
import ChatStore
import ChatSync
import Foundation

/// `chat-sync send --to ID TEXT`: queue a message (works offline).
enum SendCommand: ParsableCommand {
  static let name = "send"
  static let abstract = "Queue a message; a running 'chat-sync run' sends it at once."
  static let discussion: String? = """
    The message goes into the file's outbox (MessageRequests) and stays there until the \
    relay acknowledges it, whatever happens to the network. Without a running 'run', it \
    is sent by the next 'chat-sync run'. A recipient not yet in the file gets their \
    profile from the relay when it can be reached, else a stand-in ('user 7').
    """

  static let examples = [
    "chat-sync send --user 42 --to 7 'Lunch on Friday at noon?'",
    "chat-sync send --user 42 --to 7 --json 'See you there'",
  ]

  struct Options: ParsableOptions {
    var file: ClientFile
    var relay: RelayAccess
    var to: Int64
    var text: String
    init(_ o: inout OptionReader) {
      file = ClientFile(&o)
      relay = RelayAccess(&o)
      to = o.option("--to", valueName: "id", help: "The recipient's user id.", required: true, parse: Parse.userID) ?? 0
      text = o.argument("text", help: "The message (1 to 65,536 bytes of UTF-8).") ?? ""
    }
    func validate() throws {
      try file.validate()
      let bytes = text.utf8.count
      guard bytes >= 1, bytes <= ChatRepository.maximumContentBytes else {
        throw ValidationError("The message must be 1 to 65,536 bytes; it has \(bytes)")
      }
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    // With a relay at hand, the token must be the file owner's before anything is queued.
    let http = try? options.relay.transports().0
    let reachable =
      try http.map {
        try options.relay.requireIdentity(try options.file.owner(), http: $0, timeout: 3, refusedIsFatal: false)
      } ?? false
    let repository = try options.file.open(create: true)
    if try repository.user(options.to) == nil {
      let fetched: User? =
        reachable ? http.flatMap { http in blocking { try? await RelayRequests(http: http).profile(options.to) } } : nil
      try repository.addPlaceholder(fetched ?? User(id: options.to, name: "user \(options.to)"))
    }
    let request = try repository.send(to: options.to, content: options.text)
    let nudged = Nudge.send("outbox", to: options.file.target.path)
    try options.file.report(
      context,
      Result(
        requestId: request.requestID, toUserId: request.toUserID, status: request.status.rawValue,
        createdAt: request.createdAt, runNudged: nudged),
      text: "Queued request \(request.requestID) to user \(options.to)"
        + (nudged ? "; 'chat-sync run' is sending it." : "; the next 'chat-sync run' sends it."))
  }

  /// `result`: the request queued in the outbox, and whether a running `chat-sync run`
  /// was told to send it.
  struct Result: CommandResult {
    var requestId: Int64
    var toUserId: Int64
    var status: String
    var createdAt: String
    var runNudged: Bool

    static var example: Result {
      Result(requestId: 18, toUserId: 7, status: "PENDING", createdAt: "2026-12-01T12:02:41.180Z", runNudged: true)
    }
  }
}
