import ChatCLI
import TestSupport
import Testing

@testable import chat_relay
@testable import chat_sync
@testable import chatdb

/// Every EXAMPLES line of the three programs' help is a command line the parser accepts:
/// parsed and its options read and validated (nothing runs).
@Suite(.ownThreads) struct HelpExampleTests {
  static let programs: [Command] = [ChatDBProgram.root, ChatSyncProgram.root, ChatRelayProgram.root]

  /// (command path, example) for every command of every program.
  static let examples: [(path: String, example: String)] = programs.flatMap { root in
    commands(root, path: []).flatMap { command, path in command.examples.map { (path, $0) } }
  }

  static func commands(_ command: Command, path: [String]) -> [(Command, String)] {
    let path = path + [command.name]
    return [(command, path.joined(separator: " "))] + command.subcommands.flatMap { commands($0, path: path) }
  }

  @Test func everyCommandShowsTwoOrThreeExamples() {
    for root in Self.programs {
      for (command, path) in Self.commands(root, path: []) {
        #expect((2...3).contains(command.examples.count), "\(path) has \(command.examples.count) examples")
      }
    }
  }

  @Test(arguments: examples.map { "\($0.path): \($0.example)" })
  func exampleParses(_ line: String) throws {
    let (path, example) = try #require(Self.examples.first { "\($0.path): \($0.example)" == line })
    let program = String(path.split(separator: " ")[0])
    let root = try #require(Self.programs.first { $0.name == program })
    // The part of a pipeline that runs this program, its words as a shell splits them.
    let words = try #require(
      Self.shellWords(example).split(separator: "|").first { $0.first == program }, "\(example) does not run \(program)"
    )
    let tool = CommandLineTool(root: root, version: Release.version)
    switch tool.parse(Array(words.dropFirst())) {
    case .run(let parsed):
      #expect(parsed.path.joined(separator: " ").hasPrefix(path), "\(example) runs \(parsed.path), not \(path)")
      do { try parsed.command.check?(parsed) } catch { Issue.record("\(example): \(error)") }
    case .usageError(let error): Issue.record("\(example): \(error.description)")
    case .help, .version: Issue.record("\(example) prints help instead of running")
    }
  }

  /// `text` split as a POSIX shell splits words: single and double quotes, and `|` as a
  /// word of its own.
  static func shellWords(_ text: String) -> [String] {
    var words: [String] = []
    var current = ""
    var quote: Character?
    var inWord = false
    for character in text {
      if let open = quote {
        if character == open { quote = nil } else { current.append(character) }
      } else if character == "'" || character == "\"" {
        quote = character
        inWord = true
      } else if character == " " {
        if inWord { words.append(current) }
        current = ""
        inWord = false
      } else if character == "|" {
        if inWord { words.append(current) }
        words.append("|")
        current = ""
        inWord = false
      } else {
        current.append(character)
        inWord = true
      }
    }
    if inWord { words.append(current) }
    return words
  }
}
