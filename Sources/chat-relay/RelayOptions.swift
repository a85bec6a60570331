import ChatCLI
import ChatRelay
import ChatStore

/// `--db <path>`: the relay's own SQLite file (not a chats-<id>.db).
struct RelayDatabase: Sendable {
  var path: String
  init(_ o: inout OptionReader) {
    path = o.option("--db", valueName: "path", help: "The relay's database file (created when missing).", required: true, parse: Parse.path) ?? ""
  }

  /// The one-file report every relay command gives.
  func report(_ context: CommandContext, json: JSONValue, text: String, totals: [String: Int64] = [:]) {
    context.report([FileReport(target: FileTarget(path: path, userID: nil), outcome: .success(FileResult(json: json, text: text, totals: totals)))])
  }
}
