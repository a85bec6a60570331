import ChatCLI
import ChatProtocol
import ChatStore
import ChatSync
import Foundation

/// `chat-sync send --to ID [--attach FILE]… TEXT`: queue a message (works offline).
enum SendCommand: ParsableCommand {
  static let name = "send"
  static let abstract = "Queue a message; a running 'chat-sync run' sends it at once."
  static let discussion: String? = """
    The message goes into the file's outbox (MessageRequests) and stays there until the \
    relay acknowledges it, whatever happens to the network. Without a running 'run', it \
    is sent by the next 'chat-sync run'. A recipient not yet in the file gets their \
    profile from the relay when it can be reached, else a stand-in ('user 7'). Each \
    --attach copies a file into the media folder beside the file (chats-<id>.media/, \
    named by its SHA-256) and, for an image, makes its thumbnail at once; 'run' uploads \
    the files (resuming after any kill) and posts the message once they are all on the \
    relay. The text may be left out when something is attached.
    """

  static let examples = [
    "chat-sync send --user 42 --to 7 'Lunch on Friday at noon?'",
    "chat-sync send --user 42 --to 7 --json 'See you there'",
    "chat-sync send --user 42 --to 7 --attach beach.jpg 'The view from the room'",
  ]

  struct Options: ParsableOptions {
    var file: ClientFile
    var relay: RelayAccess
    var to: Int64
    var attach: [String]
    var mime: String?
    var text: String
    init(_ o: inout OptionReader) {
      file = ClientFile(&o)
      relay = RelayAccess(&o)
      to = o.option("--to", valueName: "id", help: "The recipient's user id.", required: true, parse: Parse.userID) ?? 0
      attach = o.repeated(
        "--attach", valueName: "file",
        help: "A file to send with the message (repeatable, up to \(RelayAttachment.maximumCount)).",
        parse: { $0.isEmpty ? nil : $0 })
      mime = o.option(
        "--mime", valueName: "type",
        help: "The attached files' media type (default: from each file's extension, else application/octet-stream).",
        parse: { text in text.contains("/") && !text.contains(" ") ? text : nil })
      text =
        o.argument(
          "text", help: "The message (up to 65,536 bytes of UTF-8; may be left out with --attach).", optional: true)
        ?? ""
    }
    func validate() throws {
      try file.validate()
      let bytes = text.utf8.count
      guard bytes >= (attach.isEmpty ? 1 : 0), bytes <= ChatRepository.maximumContentBytes else {
        throw ValidationError("The message must be 1 to 65,536 bytes; it has \(bytes)")
      }
      guard attach.count <= RelayAttachment.maximumCount else {
        throw ValidationError(
          "At most \(RelayAttachment.maximumCount) files go with one message; --attach has \(attach.count)")
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
    // Copied in under temporary names, named in the transaction that queues the message.
    var staged: [StagedMedia] = []
    defer { for media in staged { unlink(media.temporary) } }
    for path in options.attach { staged.append(try repository.stageMedia(copying: path, mime: options.mime)) }
    let attachments = staged.map(\.attachment)
    let request = try repository.send(to: options.to, content: options.text, staged: staged)
    let nudged = Nudge.send("outbox", to: options.file.target.path)
    try options.file.report(
      context,
      Result(
        requestId: request.requestID, toUserId: request.toUserID, status: request.status.rawValue,
        createdAt: request.createdAt, runNudged: nudged,
        attachments: attachments.map {
          AttachmentResult(sha256: $0.sha256, mime: $0.mime, size: $0.size, thumbnailBytes: $0.thumbnail?.count)
        }),
      text: "Queued request \(request.requestID) to user \(options.to)"
        + (attachments.isEmpty
          ? "" : " with \(attachments.count) file(s), \(ByteCount.format(attachments.reduce(0) { $0 + $1.size }))")
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
    /// The files queued with it, as stored in the media folder.
    var attachments: [AttachmentResult]

    static var example: Result {
      Result(
        requestId: 18, toUserId: 7, status: "PENDING", createdAt: "2026-12-01T12:02:41.180Z", runNudged: true,
        attachments: [
          AttachmentResult(
            sha256: "5f1c0a7e3d2b4c6a8e9f0b1d2c3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e", mime: "image/jpeg",
            size: 2_481_337, thumbnailBytes: 14_212)
        ])
    }
  }

  /// One attached file: its name in the media folder, type, size, and the thumbnail's
  /// bytes (null: none, not an image libvips reads).
  struct AttachmentResult: Codable, Sendable {
    var sha256: String
    var mime: String
    var size: Int64
    var thumbnailBytes: Int?
  }
}
