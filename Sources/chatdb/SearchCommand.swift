import ChatCLI
import ChatCommands
import ChatStore

/// `chatdb search --user ID TEXT`: full-text search over one user's history and outbox.
enum SearchCommand: ParsableCommand {
  typealias Result = SearchOutput.Result
  static let name = "search"
  static let abstract = "Find messages and unsent requests by their text, newest first."
  static let discussion: String? = """
    Every word of TEXT must match a whole word, ignoring case and accents ('cafe' \
    finds 'café'); CJK characters match anywhere in a run ('你好' finds '你好世界'). \
    Words are searched as written: quotes, '*', 'AND', 'NEAR' and parentheses are \
    text, not query syntax. TEXT without letters or digits ('*', an emoji) is found \
    as a literal substring, by a scan. Unsent requests come first, then messages by \
    id; --before takes the 'older' cursor a page prints. Reads the search index of \
    migration 0005 (an older file: run 'chatdb migrate' first, exit 15). Opens the \
    file read-only.
    """

  static let examples = [
    "chatdb search --user 42 'lunch friday'",
    "chatdb search --user 42 --with 7 --limit 10 'café'",
    "chatdb search --user 42 --before m7337265813504001 lunch",
  ]

  struct Options: ParsableOptions {
    var store: StoreSelection
    var search: SearchOutput.Options
    init(_ o: inout OptionReader) {
      store = StoreSelection(&o, all: false)
      search = SearchOutput.Options(&o)
    }
    func validate() throws {
      try store.validate()
      try search.validate()
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let reports = context.runEach(try options.store.targets(), jobs: 1, label: "Searching") { target, _ in
      let db = try openLatest(target.path, mode: .readOnly, for: "search")
      guard let owner = try target.userID ?? recordedOwner(db) else {
        throw StoreError(
          .badInput, "\(target.path): whose file this is is unknown; name it chats-<userId>.db", path: target.path)
      }
      let page: SearchPage
      do { page = try options.search.search(ChatRepository(database: db, ownerID: owner)) } catch {
        throw StoreError.from(error, path: target.path, doing: "search", otherwise: .readFailed)
      }
      let query = options.search.text
      return try FileResult(
        Result(page, query: query),
        text: SearchOutput.text(page, owner: owner, query: query, terminal: context.stdout.isTerminal),
        row: [String(page.hits.count)], totals: ["hits": Int64(page.hits.count)])
    }
    context.report(reports)
  }
}
