import ChatCLI
import ChatRelay
import ChatStore

/// `--db <path>`: the relay's own SQLite file (not a chats-<id>.db).
struct RelayDatabase: Sendable {
  var path: String
  init(_ o: inout OptionReader) {
    path =
      o.option(
        "--db", valueName: "path",
        help: "The relay's database file ('user add' creates it; 'serve' only with --create).", required: true,
        parse: Parse.path) ?? ""
  }

  /// The relay's store, which must exist already: commands that only read or change
  /// users never create an empty relay.db by mistake.
  /// `readOnly`: for the commands that only list (nothing is created, migrated or written).
  func existing(readOnly: Bool = false) throws -> RelayStore {
    try requireExisting()
    return try RelayStore(path: path, readOnly: readOnly)
  }

  /// Refuses a missing or empty file (66): a mistyped `--db` must not start an empty
  /// relay that answers every client 401. An empty file holds no relay yet: these
  /// commands leave it empty, as they leave a missing one missing.
  func requireExisting() throws {
    let create = "'chat-relay user add' creates it, 'chat-relay serve --create' an empty one"
    guard FileSystem.exists(path) else {
      throw StoreError(.notFound, "\(path): no such relay database (\(create))", path: path)
    }
    try RelayStore.refuseSpecialFile(path)
    guard FileSystem.size(atPath: path) != 0 else {
      throw StoreError(.notFound, "\(path) is empty: no relay data (\(create))", path: path)
    }
  }

  /// The one-file report every relay command gives.
  func report(_ context: CommandContext, _ result: some CommandResult, text: String, totals: [String: Int64] = [:])
    throws
  {
    context.report([
      FileReport(
        target: FileTarget(path: path, userID: nil),
        outcome: .success(try FileResult(result, text: text, totals: totals)))
    ])
  }
}
