import ChatCLI
import ChatMaintenance
import ChatStore
import Foundation

/// `chatdb policy show|set`: a file's automatic hygiene, which `chat-sync run` enforces.
enum PolicyCommand {
  static let command = Command.group(
    name: "policy",
    abstract: "Show or set the storage policy 'chat-sync run' enforces on a file.",
    discussion: """
      The policy is kept in the file (StoreInfo), so every program sees the same one: \
      --keep-media removes the files of media not accessed for that long, \
      --media-cache-max keeps the media files under a size (least recently accessed \
      first), --keep-messages deletes older messages (and the media only they had). \
      'chat-sync run' enforces it when it starts, hourly, and at once when the disk falls \
      below the warning level, media first, then messages, with 'chatdb evict''s short \
      write locks; 'chat-sync status' shows the policy and its last run. Unsent \
      messages and their files are never touched.
      """,
    subcommands: [Command(PolicyShowCommand.self), Command(PolicySetCommand.self)],
    examples: ["chatdb policy show --user 42", "chatdb policy set --user 42 --keep-media 90d --media-cache-max 2GiB"])

  /// `result`: the policy (null where it keeps everything) and what its last run did.
  struct Result: CommandResult {
    /// Ages as `1y`, `90d`, `12h`; with their milliseconds and the cap in bytes.
    var keepMedia: String?
    var keepMediaMilliseconds: Int64?
    var mediaCacheMax: Int64?
    var keepMessages: String?
    var keepMessagesMilliseconds: Int64?
    /// When `chat-sync run` last enforced it, and what that did.
    var lastRun: String?

    init(_ policy: StoragePolicy, lastRun: String?) {
      keepMedia = policy.keepMedia.map(EvictionPolicy.ageText)
      keepMediaMilliseconds = policy.keepMedia
      mediaCacheMax = policy.mediaCacheMax
      keepMessages = policy.keepMessages.map(EvictionPolicy.ageText)
      keepMessagesMilliseconds = policy.keepMessages
      self.lastRun = lastRun
    }

    static var example: Result {
      Result(
        StoragePolicy(keepMedia: 90 * 86_400_000, mediaCacheMax: 2 << 30),
        lastRun:
          "2026-12-04T12:00:00.000Z: removed 12 media file(s) (48213504 bytes), deleted 0 message(s) and 0 media no message kept; longest write lock 1.2 ms"
      )
    }
  }

  static func text(_ path: String, _ result: Result) -> String {
    """
    \(path):
      keep media:     \(result.keepMedia ?? "always")
      media cache:    \(result.mediaCacheMax.map(ByteCount.format) ?? "no cap")
      keep messages:  \(result.keepMessages ?? "always")
      last run:       \(result.lastRun ?? "never")
    """
  }
}

/// `chatdb policy show`.
enum PolicyShowCommand: ParsableCommand {
  static let name = "show"
  static let abstract = "Show a file's storage policy and what its last run did."
  static let discussion: String? = "Opens the file read-only."
  static let examples = ["chatdb policy show --user 42", "chatdb policy show --all --json"]

  struct Options: ParsableOptions {
    var store: StoreSelection
    init(_ o: inout OptionReader) { store = StoreSelection(&o, all: true) }
    func validate() throws { try store.validate() }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let reports = context.runEach(try options.store.targets(), jobs: options.store.jobs, label: "Reading") {
      target, _ in
      let db = try openLatest(target.path, mode: .readOnly, for: "policy")
      let result = PolicyCommand.Result(try StoragePolicy.load(from: db), lastRun: try StoragePolicy.lastRun(in: db))
      return try FileResult(
        result, text: PolicyCommand.text(target.path, result),
        row: [result.keepMedia ?? "-", result.mediaCacheMax.map(ByteCount.format) ?? "-", result.keepMessages ?? "-"])
    }
    context.report(
      reports,
      fleet: options.store.all ? [.init("KEEP MEDIA"), .init("MEDIA CACHE"), .init("KEEP MESSAGES")] : nil,
      summaryLine: nil)
  }

  typealias Result = PolicyCommand.Result
}

/// `chatdb policy set`.
enum PolicySetCommand: ParsableCommand {
  static let name = "set"
  static let abstract = "Set a file's storage policy ('off' removes one part of it)."
  static let discussion: String? = """
    Only the parts given change. Ages: 12h, 90d, 6w, 1y (365 days); sizes: 500MiB, 2GB. \
    'chat-sync run' applies the new policy at its next hourly pass (or when it starts); \
    'chatdb evict' with the same options applies it now.
    """
  static let examples = [
    "chatdb policy set --user 42 --keep-media 90d --media-cache-max 2GiB",
    "chatdb policy set --all --keep-messages 1y --keep-media off",
  ]

  struct Options: ParsableOptions {
    var store: StoreSelection
    var keepMedia: Int64??
    var mediaCacheMax: Int64??
    var keepMessages: Int64??
    init(_ o: inout OptionReader) {
      store = StoreSelection(&o, all: true)
      func age(_ text: String) throws -> Int64?? {
        if text == "off" { return .some(nil) }
        guard let age = EvictionPolicy.age(text), age > 0 else {
          throw InvalidValue("expected an age like 12h, 90d, 6w or 1y, or 'off'")
        }
        return .some(age)
      }
      keepMedia = o.option(
        "--keep-media", valueName: "age", help: "Remove media files not accessed for this long, or 'off'.", parse: age)
      mediaCacheMax = o.option(
        "--media-cache-max", valueName: "size", help: "Keep the media files under this size (e.g. 2GiB), or 'off'."
      ) { text -> Int64?? in text == "off" ? .some(nil) : try Parse.size(text).map { .some($0) } }
      keepMessages = o.option(
        "--keep-messages", valueName: "age", help: "Delete messages older than this, or 'off'.", parse: age)
    }
    func validate() throws {
      try store.validate()
      if keepMedia == nil && mediaCacheMax == nil && keepMessages == nil {
        throw ValidationError("Missing a part to set: '--keep-media', '--media-cache-max' or '--keep-messages'")
      }
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let reports = context.runEach(try options.store.targets(), jobs: options.store.jobs, label: "Setting") {
      target, _ in
      let db = try openLatest(target.path, mode: .readWrite, for: "policy")
      var policy = try StoragePolicy.load(from: db)
      if let keepMedia = options.keepMedia { policy.keepMedia = keepMedia }
      if let cap = options.mediaCacheMax { policy.mediaCacheMax = cap }
      if let keepMessages = options.keepMessages { policy.keepMessages = keepMessages }
      do {
        try policy.save(to: db)
      } catch {
        throw StoreError.from(error, path: target.path, doing: "set the policy of")
      }
      let result = PolicyCommand.Result(policy, lastRun: try StoragePolicy.lastRun(in: db))
      return try FileResult(result, text: PolicyCommand.text(target.path, result), row: [])
    }
    context.report(reports, fleet: options.store.all ? [] : nil, summaryLine: nil)
  }

  typealias Result = PolicyCommand.Result
}
