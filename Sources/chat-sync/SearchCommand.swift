import ChatCLI
import ChatCommands
import ChatStore

/// `chat-sync search TEXT`: the app's search box, through `ChatRepository.search`.
enum SearchCommand: ParsableCommand {
  typealias Result = SearchOutput.Result
  static let name = "search"
  static let abstract = "Find messages and messages still being sent by their text, newest first."
  static let discussion: String? = """
    The same search as 'chatdb search': every word must match a whole word (case and \
    accents ignored), CJK characters anywhere in a run, query syntax is text. Pages \
    go back with --before and the 'older' cursor a page prints.
    """

  static let examples = [
    "chat-sync search --user 42 'lunch friday'",
    "chat-sync search --user 42 --with 7 --before m7337265813504001 lunch",
  ]

  struct Options: ParsableOptions {
    var file: ClientFile
    var search: SearchOutput.Options
    init(_ o: inout OptionReader) {
      file = ClientFile(&o)
      search = SearchOutput.Options(&o)
    }
    func validate() throws {
      try file.validate()
      try search.validate()
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let repository = try options.file.open(create: false)
    let page = try options.search.search(repository)
    let query = options.search.text
    try options.file.report(
      context, Result(page, query: query),
      text: SearchOutput.text(page, owner: repository.ownerID, query: query, terminal: context.stdout.isTerminal))
  }
}
