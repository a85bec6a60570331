import ChatCLI
import ChatStore
import ChatSync
import Foundation

/// `chat-sync fetch --message ID`: download a message's media now.
enum FetchCommand: ParsableCommand {
  static let name = "fetch"
  static let abstract = "Download the media of a message into the media folder."
  static let discussion: String? = """
    A received message comes with its thumbnails; its media are downloaded at once only \
    when 'run --auto-download-max' allows. This downloads the rest (or what eviction \
    removed) from the relay into chats-<id>.media/, a ranged request at a time: a fetch \
    cut short resumes from the partial file, and each file is kept only once its SHA-256 \
    matches. Prints each file's path. Exit 66 for a message not in the file or without \
    media, 69 when the relay cannot be reached or no longer has a media (its message \
    outlived the relay's retention).
    """

  static let examples = [
    "chat-sync fetch --user 42 --message 7337265813504001",
    "chat-sync fetch --user 42 --message 7337265813504001 --json",
  ]

  struct Options: ParsableOptions {
    var file: ClientFile
    var relay: RelayAccess
    var message: Int64
    init(_ o: inout OptionReader) {
      file = ClientFile(&o)
      relay = RelayAccess(&o)
      message =
        o.option(
          "--message", valueName: "id", help: "The message whose media to download.", required: true,
          parse: Parse.userID) ?? 0
    }
    func validate() throws { try file.validate() }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let repository = try options.file.open(create: false)
    let path = options.file.target.path
    guard try repository.hasMessage(options.message) else {
      throw StoreError(.notFound, "\(path): no message \(options.message)", path: path)
    }
    let attachments = try repository.attachments(ofMessage: options.message)
    guard !attachments.isEmpty else {
      throw StoreError(.notFound, "\(path): message \(options.message) has no media", path: path)
    }
    let folder = repository.mediaFolder
    let missing = attachments.filter {
      $0.state != .local || FileSystem.size(atPath: folder.file($0.sha256)) != $0.size
    }
    if let never = missing.first(where: { $0.relayID == nil || SHA256.bytes(hex: $0.sha256) == nil }) {
      // A queued message's file imported without its bytes: never on the relay.
      throw StoreError(.notFound, "\(path): media \(never.sha256) is not here and was never on the relay", path: path)
    }
    if !missing.isEmpty {
      let (http, _) = try options.relay.transports()
      try folder.create()
      // Wanted (`partial`) first: a run that starts meanwhile resumes it rather than forgets it.
      try repository.want(missing.map(\.sha256))
      try repository.setStates(missing.filter { $0.state != .remote }.map(\.sha256), .partial)
      let transfer = MediaTransfer(http: http)
      for media in missing {
        guard let relayID = media.relayID, let digest = SHA256.bytes(hex: media.sha256) else {
          throw StoreError(.badInput, "\(path): media \(media.sha256) has no relay id", path: path)
        }
        let progress = ProgressBox(
          ChatCLI.Progress(label: "fetch \(media.sha256.prefix(12))", total: media.size, unit: "B"))
        let outcome = blocking { () async -> String? in
          while true {
            do throws(MediaTransfer.Failure) {
              try await transfer.download(
                media: relayID, size: media.size, sha256: digest, to: folder.file(media.sha256),
                progress: { progress.progress.update(completed: $0, bytes: $0) })
              return nil
            } catch  where error.lockedByAnother {
              // A running `chat-sync run` is downloading it: the file is on its way.
              try? await Task.sleep(for: .milliseconds(200))
            } catch {
              return error.description
            }
          }
        }
        progress.progress.finish()
        if let failure = outcome {
          throw OnceFailure(status: .unavailable, message: "message \(options.message): \(failure)")
        }
      }
    }
    // Every one is here now: local, and accessed now (eviction by size keeps it longest).
    try repository.downloaded(attachments.map(\.sha256))
    let result = Result(
      messageId: options.message,
      attachments: attachments.map {
        File(
          sha256: $0.sha256, mime: $0.mime, size: $0.size, path: folder.file($0.sha256),
          downloaded: missing.contains($0))
      })
    try options.file.report(
      context, result,
      text: result.attachments.map { "\($0.path)\t\($0.mime)\t\(ByteCount.format($0.size))" }.joined(separator: "\n"))
  }

  /// `result`: the message's media, in order, each with its file and whether this
  /// fetch downloaded it.
  struct Result: CommandResult {
    var messageId: Int64
    var attachments: [File]

    static var example: Result {
      Result(
        messageId: 7_337_265_813_504_001,
        attachments: [
          File(
            sha256: "5f1c0a7e3d2b4c6a8e9f0b1d2c3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e", mime: "image/jpeg",
            size: 2_481_337,
            path: "/home/ada/.local/share/chatdb/chats-42.media/"
              + "5f1c0a7e3d2b4c6a8e9f0b1d2c3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e",
            downloaded: true)
        ])
    }
  }

  struct File: Codable, Sendable {
    var sha256: String
    var mime: String
    var size: Int64
    var path: String
    var downloaded: Bool
  }
}

/// A terminal progress line updated from the download's task while the command's thread
/// waits for it (one writer at a time).
private final class ProgressBox: @unchecked Sendable {
  let progress: ChatCLI.Progress
  init(_ progress: ChatCLI.Progress) { self.progress = progress }
}
