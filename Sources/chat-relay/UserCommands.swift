import ChatCLI
import ChatProtocol
import ChatRelay
import ChatStore

/// `chat-relay user add`: a new user, their first device and its token.
enum UserAddCommand: ParsableCommand {
  typealias Result = TokenResult
  static let name = "add"
  static let abstract = "Add a user with their first device; prints its new token as the last line."
  static let discussion: String? = """
    The token is shown once: the relay keeps only its SHA-256. Give it to chat-sync \
    (CHAT_SYNC_TOKEN or --token-file). A user id is a positive 64-bit integer, as in chats-<id>.db. The token \
    belongs to the user's first device (named 'first device'); 'chat-relay device add' \
    gives them more.
    """

  static let examples = [
    "chat-relay user add --db relay.db --id 42 --name Grace",
    "chat-relay user add --db relay.db --id 7 --name Ada --avatar-url https://example.com/ada.png --json",
  ]

  struct Options: ParsableOptions {
    var database: RelayDatabase
    var id: Int64
    var name: String
    var avatarURL: String?
    init(_ o: inout OptionReader) {
      database = RelayDatabase(&o)
      id = o.option("--id", valueName: "id", help: "The user's id.", required: true, parse: Parse.userID) ?? 0
      name =
        o.option("--name", valueName: "name", help: "The user's display name.", required: true) { text -> String? in
          guard !text.isEmpty, text.utf8.count <= 256 else { throw InvalidValue("a name is 1 to 256 bytes") }
          return text
        } ?? ""
      avatarURL = o.option("--avatar-url", valueName: "url", help: "The user's avatar URL.", parse: Parse.path)
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let store = try RelayStore(path: options.database.path)
    let token = try store.addUser(id: options.id, name: options.name, avatarURL: options.avatarURL)
    let device = try store.devices(of: options.id).first?.id ?? 0
    try options.database.report(
      context, TokenResult(userId: options.id, deviceId: device, token: token),
      text: "Added user \(options.id) (\(options.name)) with device \(device). Token (shown once):\n\(token)")
  }
}

/// `chat-relay user list`.
enum UserListCommand: ParsableCommand {
  static let name = "list"
  static let abstract = "List the relay's users (never their tokens)."

  static let examples = [
    "chat-relay user list --db relay.db",
    "chat-relay user list --db relay.db --json",
  ]

  struct Options: ParsableOptions {
    var database: RelayDatabase
    init(_ o: inout OptionReader) { database = RelayDatabase(&o) }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let users = try options.database.existing(readOnly: true).users()
    let table = Table(
      columns: [.init("ID", alignment: .right), .init("NAME"), .init("AVATAR"), .init("LAST CONNECTED")],
      rows: users.map { [String($0.id), $0.name, $0.avatarURL ?? "", $0.lastConnectedAt ?? "never"] }
    ).render()
    try options.database.report(
      context, Result(users: users), text: table + "\(users.count) user(s)",
      totals: ["users": Int64(users.count)])
  }

  /// `result`: every user (`RelayUser`, as the protocol writes it), never a token.
  struct Result: CommandResult {
    var users: [RelayUser]

    static var example: Result {
      Result(users: [
        RelayUser(id: 7, name: "Ada", avatarURL: "https://example.com/ada.png", lastConnectedAt: nil),
        RelayUser(id: 42, name: "Grace", avatarURL: nil, lastConnectedAt: "2026-12-01T12:03:00.412Z"),
      ])
    }
  }
}

/// `--db` and `--id`: the options of the commands that act on one user.
struct UserIDOptions: ParsableOptions {
  var database: RelayDatabase
  var id: Int64
  init(_ o: inout OptionReader) {
    database = RelayDatabase(&o)
    id = o.option("--id", valueName: "id", help: "The user's id.", required: true, parse: Parse.userID) ?? 0
  }
}

/// `chat-relay user remove`.
enum UserRemoveCommand: ParsableCommand {
  static let name = "remove"
  static let abstract = "Remove a user with their devices and tokens."

  static let examples = [
    "chat-relay user remove --db relay.db --id 7",
    "chat-relay user remove --db relay.db --id 7 --json",
  ]

  typealias Options = UserIDOptions

  static func run(_ options: Options, in context: CommandContext) throws {
    try options.database.existing().removeUser(id: options.id)
    try options.database.report(
      context, Result(userId: options.id, removed: true), text: "Removed user \(options.id)")
  }

  /// `result`: the user removed.
  struct Result: CommandResult {
    var userId: Int64
    var removed: Bool

    static var example: Result { Result(userId: 7, removed: true) }
  }
}

/// `chat-relay user token`: rotate the token of one of a user's devices.
enum UserTokenCommand: ParsableCommand {
  typealias Result = TokenResult
  static let name = "token"
  static let abstract =
    "Give a user's device a new token (the old one stops working); prints it as the last line."
  static let discussion: String? = """
    Without --device, the user's only device; a user with several devices needs \
    --device (see 'chat-relay device list'). The user's other devices keep their tokens.
    """

  static let examples = [
    "chat-relay user token --db relay.db --id 42",
    "chat-relay user token --db relay.db --id 42 --device 3 --json",
  ]

  struct Options: ParsableOptions {
    var user: UserIDOptions
    var device: Int64?
    init(_ o: inout OptionReader) {
      user = UserIDOptions(&o)
      device = o.option(
        "--device", valueName: "id", help: "The device's id (needed when the user has several).",
        parse: parseDeviceID)
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let id = options.user.id
    let store = try options.user.database.existing()
    var device = options.device
    if device == nil {
      let devices = try store.devices(of: id)
      if devices.count > 1 {
        throw UsageError(
          "User \(id) has \(devices.count) devices (\(RelayStore.describe(devices))); choose one with '--device <id>'",
          in: Self.self, context: context)
      }
      device = devices.first?.id
    }
    let token = try store.rotateToken(id: id, device: device)
    try options.user.database.report(
      context, TokenResult(userId: id, deviceId: device ?? 0, token: token),
      text:
        "New token for device \(device ?? 0) of user \(id) (shown once; the old one no longer works):\n\(token)")
  }
}

/// `chat-relay push list`.
enum PushListCommand: ParsableCommand {
  static let name = "list"
  static let abstract = "List the push notifications recorded for users who were offline."

  static let examples = [
    "chat-relay push list --db relay.db",
    "chat-relay push list --db relay.db --limit 10 --json",
  ]

  struct Options: ParsableOptions {
    var database: RelayDatabase
    var limit: Int
    init(_ o: inout OptionReader) {
      database = RelayDatabase(&o)
      limit =
        o.option(
          "--limit", valueName: "n", help: "The newest n records (default 100).",
          parse: Parse.count(from: 1, to: 1_000_000)) ?? 100
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let pushes = try options.database.existing(readOnly: true).pushes(limit: options.limit)
    let table = Table(
      columns: [
        .init("ID", alignment: .right), .init("TO", alignment: .right), .init("MESSAGE", alignment: .right),
        .init("AT"),
      ],
      rows: pushes.map { [String($0.id), String($0.toUserId), String($0.messageId), $0.createdAt] }
    ).render()
    try options.database.report(
      context, Result(pushes: pushes), text: table + "\(pushes.count) push record(s)",
      totals: ["pushes": Int64(pushes.count)])
  }

  /// `result`: the newest push records (`PushRecord`, as the protocol writes it).
  struct Result: CommandResult {
    var pushes: [PushRecord]

    static var example: Result {
      Result(pushes: [
        PushRecord(
          id: 3, toUserId: 7, messageId: 7_337_265_813_504_001, createdAt: "2026-12-01T12:02:41.180Z", unread: 2)
      ])
    }
  }
}

/// The `result` of `user add` and `user token`: the new token (shown once) and the
/// device it belongs to.
struct TokenResult: CommandResult {
  var userId: Int64
  var deviceId: Int64
  var token: String

  static var example: TokenResult {
    TokenResult(userId: 7, deviceId: 1, token: "ct_4f9a1c2e7b3d5a8e0c6f2b9d1e4a7c3f")
  }
}
