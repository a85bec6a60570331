import ChatCLI
import ChatProtocol
import ChatRelay
import ChatStore

/// `--db` and `--user`: the options of the commands that act on one user's devices.
struct DeviceUserOptions: ParsableOptions {
  var database: RelayDatabase
  var user: Int64
  init(_ o: inout OptionReader) {
    database = RelayDatabase(&o)
    user = o.option("--user", valueName: "id", help: "The user's id.", required: true, parse: Parse.userID) ?? 0
  }
}

/// A device id: a positive 64-bit integer, as `device add` and `device list` print it.
func parseDeviceID(_ text: String) throws -> Int64? {
  guard let id = StoreLocation.parseUserID(text) else {
    throw InvalidValue("a device id is a positive integer ('chat-relay device list' shows them)")
  }
  return id
}

/// `chat-relay device add`: a new device of a user and its token.
enum DeviceAddCommand: ParsableCommand {
  static let name = "add"
  static let abstract = "Add a device to a user; prints its new token as the last line."
  static let discussion: String? = """
    Each device of a user has its own token, shown once (the relay keeps only its \
    SHA-256), and numbers its own requests. Give the token to the device's chat-sync \
    (CHAT_SYNC_TOKEN or --token-file); its other devices keep theirs. The device's \
    first chat-sync run fetches the history the relay retains (serve --retention-days).
    """

  static let examples = [
    "chat-relay device add --db relay.db --user 42 --name laptop",
    "chat-relay device add --db relay.db --user 42 --name phone --json",
  ]

  struct Options: ParsableOptions {
    var owner: DeviceUserOptions
    var name: String
    init(_ o: inout OptionReader) {
      owner = DeviceUserOptions(&o)
      name =
        o.option("--name", valueName: "name", help: "The device's name.", required: true) { text -> String? in
          guard !text.isEmpty, text.utf8.count <= 256 else { throw InvalidValue("a name is 1 to 256 bytes") }
          return text
        } ?? ""
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let database = options.owner.database
    let (device, token) = try database.existing().addDevice(user: options.owner.user, name: options.name)
    try database.report(
      context, Result(userId: device.userId, deviceId: device.id, name: device.name, token: token),
      text: "Added device \(device.id) (\(device.name)) to user \(device.userId). Token (shown once):\n\(token)")
  }

  /// `result`: the new device and its token (shown once).
  struct Result: CommandResult {
    var userId: Int64
    var deviceId: Int64
    var name: String
    var token: String

    static var example: Result {
      Result(userId: 42, deviceId: 3, name: "laptop", token: "ct_4f9a1c2e7b3d5a8e0c6f2b9d1e4a7c3f")
    }
  }
}

/// `chat-relay device list`.
enum DeviceListCommand: ParsableCommand {
  static let name = "list"
  static let abstract = "List a user's devices (never their tokens)."
  static let discussion: String? = """
    BEHIND counts the messages of the user's log, still on the relay, that the device \
    has not acknowledged yet (sync_ack): a device that is up to date shows 0.
    """

  static let examples = [
    "chat-relay device list --db relay.db --user 42",
    "chat-relay device list --db relay.db --user 42 --json",
  ]

  typealias Options = DeviceUserOptions

  static func run(_ options: Options, in context: CommandContext) throws {
    let devices = try options.database.existing(readOnly: true).devices(of: options.user)
    let table = Table(
      columns: [
        .init("ID", alignment: .right), .init("NAME"), .init("CREATED"), .init("LAST SEEN"),
        .init("BEHIND", alignment: .right),
      ],
      rows: devices.map { [String($0.id), $0.name, $0.createdAt, $0.lastSeenAt ?? "never", String($0.lag)] }
    ).render()
    try options.database.report(
      context, Result(devices: devices), text: table + "\(devices.count) device(s) of user \(options.user)",
      totals: ["devices": Int64(devices.count)])
  }

  /// `result`: the user's devices, by id, never a token.
  struct Result: CommandResult {
    var devices: [RelayDevice]

    static var example: Result {
      Result(devices: [
        RelayDevice(
          id: 1, userId: 42, name: "first device", createdAt: "2026-11-30T09:12:44.051Z",
          lastSeenAt: "2026-12-01T12:03:00.412Z", syncedMessage: 10_916_218_899_464_192, lag: 0),
        RelayDevice(
          id: 3, userId: 42, name: "laptop", createdAt: "2026-12-01T12:05:10.220Z", lastSeenAt: nil,
          syncedMessage: 10_916_218_899_464_190, lag: 12),
      ])
    }
  }
}

/// `--db`, `--user` and `--device`: the options of the commands that act on one device.
struct DeviceIDOptions: ParsableOptions {
  var owner: DeviceUserOptions
  var device: Int64
  init(_ o: inout OptionReader) {
    owner = DeviceUserOptions(&o)
    device = o.option("--device", valueName: "id", help: "The device's id.", required: true, parse: parseDeviceID) ?? 0
  }
}

/// `chat-relay device remove`.
enum DeviceRemoveCommand: ParsableCommand {
  static let name = "remove"
  static let abstract = "Remove a user's device: its token is refused from then on."
  static let discussion: String? = """
    A running relay refuses the token at its next request or WebSocket upgrade (401). \
    The user and their other devices are left as they are.
    """

  static let examples = [
    "chat-relay device remove --db relay.db --user 42 --device 3",
    "chat-relay device remove --db relay.db --user 42 --device 3 --json",
  ]

  typealias Options = DeviceIDOptions

  static func run(_ options: Options, in context: CommandContext) throws {
    let database = options.owner.database
    try database.existing().removeDevice(user: options.owner.user, device: options.device)
    try database.report(
      context, Result(userId: options.owner.user, deviceId: options.device, removed: true),
      text: "Removed device \(options.device) of user \(options.owner.user)")
  }

  /// `result`: the device removed.
  struct Result: CommandResult {
    var userId: Int64
    var deviceId: Int64
    var removed: Bool

    static var example: Result { Result(userId: 42, deviceId: 3, removed: true) }
  }
}
