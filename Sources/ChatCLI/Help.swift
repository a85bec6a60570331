/// Renders help text and usage lines in swift-argument-parser's layout.
enum Help {
  /// Total line width help text is wrapped to.
  static let width = 80
  /// Column where help text starts in the ARGUMENTS / OPTIONS / SUBCOMMANDS lists.
  static let labelColumn = 26

  /// The options shown for `command`: its own, then `--version` at the root, then `-h, --help`.
  static func displayedOptions(_ command: Command, isRoot: Bool) -> [Option] {
    command.options + (isRoot ? [Option.version] : []) + [Option.help]
  }

  /// The usage items after the command path: options, arguments, `<subcommand>`.
  static func usageItems(_ command: Command) -> [String] {
    var items = command.options.map { option in
      let item = option.synopsis + (option.isRepeatable ? " ..." : "")
      return option.isRequired ? item : "[\(item)]"
    }
    items += command.arguments.map(\.synopsis)
    if !command.subcommands.isEmpty { items.append(command.run == nil ? "<subcommand>" : "[<subcommand>]") }
    return items
  }

  /// The one-line usage, e.g. `chatdb migrate [--to <n>] <file>`. When `truncated`, items that
  /// would push `Usage: <line>` past 80 columns are replaced by a single ` ...`.
  static func usage(_ command: Command, path: [String], truncated: Bool) -> String {
    var line = path.joined(separator: " ")
    let items = usageItems(command)
    let full = ([line] + items).joined(separator: " ")
    guard truncated, "Usage: ".count + full.count > width else { return full }
    for item in items {
      guard "Usage: ".count + line.count + 1 + item.count + " ...".count <= width else { break }
      line += " " + item
    }
    return line + " ..."
  }

  /// The full help text for the command at `path` (ending with a newline).
  static func text(for command: Command, path: [String]) -> String {
    let isRoot = path.count == 1
    var sections: [String] = []
    if !command.abstract.isEmpty { sections.append(wrap("OVERVIEW: " + command.abstract, indent: 0)) }
    if let discussion = command.discussion, !discussion.isEmpty {
      sections.append(
        discussion.split(separator: "\n", omittingEmptySubsequences: false)
          .map { wrap(String($0), indent: 0) }.joined(separator: "\n"))
    }
    let usageWords = ["USAGE:"] + path + usageItems(command)
    sections.append(wrap(words: usageWords, indent: "USAGE: ".count))
    if !command.arguments.isEmpty {
      sections.append(list("ARGUMENTS:", command.arguments.map { ("<\($0.name)>", $0.help) }))
    }
    let options = displayedOptions(command, isRoot: isRoot).map { option in
      let label = option.names.joined(separator: ", ") + (option.valueName.map { " <\($0)>" } ?? "")
      return (label, option.help)
    }
    sections.append(list("OPTIONS:", options))
    if !command.subcommands.isEmpty {
      let helpPath = ([path[0], "help"] + path.dropFirst()).joined(separator: " ")
      sections.append(
        list("SUBCOMMANDS:", command.subcommands.map { ($0.name, $0.abstract) })
          + "\n\n  See '\(helpPath) <subcommand>' for detailed help.")
    }
    if !command.examples.isEmpty {
      sections.append((["EXAMPLES:"] + command.examples.map { "  " + $0 }).joined(separator: "\n"))
    }
    return sections.joined(separator: "\n\n") + "\n"
  }

  /// A titled two-column list; labels longer than the column put their help on the next line.
  static func list(_ title: String, _ rows: [(label: String, help: String)]) -> String {
    var lines = [title]
    for row in rows {
      let label = "  " + row.label
      if row.help.isEmpty {
        lines.append(label)
        continue
      }
      let help = wrap(row.help, indent: labelColumn, startColumn: labelColumn)
      if label.count + 2 <= labelColumn {
        lines.append(label.padding(to: labelColumn) + help)
      } else {
        lines.append(label)
        lines.append(String(repeating: " ", count: labelColumn) + help)
      }
    }
    return lines.joined(separator: "\n")
  }

  /// Word-wraps `text` to `width` columns. The first line is assumed to start at column
  /// `startColumn` (and is not padded); continuation lines are indented by `indent` spaces.
  static func wrap(_ text: String, indent: Int, startColumn: Int = 0) -> String {
    wrap(words: text.split(separator: " ").map(String.init), indent: indent, startColumn: startColumn)
  }

  /// Wraps `words` (which may contain spaces, e.g. usage items) like `wrap(_:indent:startColumn:)`.
  static func wrap(words: [String], indent: Int, startColumn: Int = 0) -> String {
    var lines: [String] = []
    var current = ""
    var column = startColumn
    for word in words {
      if !current.isEmpty && column + 1 + word.count > width {
        lines.append(current)
        current = ""
        column = indent
      }
      if current.isEmpty {
        if !lines.isEmpty { current = String(repeating: " ", count: indent) }
      } else {
        current += " "
        column += 1
      }
      current += word
      column += word.count
    }
    lines.append(current)
    return lines.joined(separator: "\n")
  }
}

extension String {
  /// Pads with spaces on the right to at least `length` characters.
  func padding(to length: Int) -> String {
    count >= length ? self : self + String(repeating: " ", count: length - count)
  }
}
