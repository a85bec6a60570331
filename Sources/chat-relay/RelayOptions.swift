import ChatCLI
import ChatRelay
import ChatStore

/// `--db <path>`: the relay's own SQLite file (not a chats-<id>.db).
struct RelayDatabase: Sendable {
  var path: String
  init(_ o: inout OptionReader) {
    path =
      o.option(
        "--db", valueName: "path", help: "The relay's database file (created when missing).", required: true,
        parse: Parse.path) ?? ""
  }

  /// The relay's store, which must exist already: commands that only read or change
  /// users never create an empty relay.db by mistake.
  /// `readOnly`: for the commands that only list (nothing is created, migrated or written).
  func existing(readOnly: Bool = false) throws -> RelayStore {
    guard FileSystem.exists(path) else {
      throw StoreError(
        .notFound, "\(path): no such relay database ('chat-relay user add' or 'serve' creates it)", path: path)
    }
    try RelayStore.refuseSpecialFile(path)
    // An empty file holds no relay yet: these commands leave it empty, as they leave a
    // missing one missing.
    guard FileSystem.size(atPath: path) != 0 else {
      throw StoreError(
        .notFound, "\(path) is empty: no relay data ('chat-relay user add' or 'serve' creates it)", path: path)
    }
    return try RelayStore(path: path, readOnly: readOnly)
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
