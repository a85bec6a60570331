import ChatStore

/// The JSON reference (`docs/json.md`), generated from the code: the envelope as
/// `CommandContext` prints it, and each command's `result` from its `CommandResult`
/// type's examples. `scripts/docs` asks each program for its part with the hidden
/// `--json-reference` (and `--json-reference envelope`) and checks the page.
enum JSONReference {
  /// The envelope: `CommandContext.report` and `fail` run on examples, their output shown
  /// with a table of its fields. `sample` is a command of the program whose example
  /// result fills the files' `result`.
  static func envelope(program: String, sample: Command) -> String {
    let result = sample.resultExamples().first ?? EmptyResult()
    let path = "/home/me/.local/share/chatdb/chats-42.db"
    let commandPath = "\(program) \(sample.name)"
    func run(_ body: (CommandContext) -> Void) -> JSONValue {
      let buffer = TextBuffer()
      let context = CommandContext(
        commandPath: commandPath, json: true, stdout: .capturing(into: buffer), stderr: TextOutput { _ in })
      body(context)
      return context.lastEnvelope ?? .null
    }
    let one = run { context in
      let file = FileReport(
        target: FileTarget(path: path, userID: 42),
        outcome: Result { try FileResult(result, text: "") }.mapError { Failure($0) })
      context.report([file])
    }
    let all = run { context in
      let ok = FileReport(
        target: FileTarget(path: path, userID: 42),
        outcome: Result { try FileResult(result, text: "") }.mapError { Failure($0) })
      let failed = FileReport(
        target: FileTarget(path: "/home/me/.local/share/chatdb/chats-7.db", userID: 7),
        outcome: .failure(Failure(StoreError(.busy, "/home/me/.local/share/chatdb/chats-7.db is locked"))))
      context.report([ok, failed], fleet: [])
    }
    let failure = run { context in
      context.fail(StoreError(.notFound, "cannot read data folder /home/me/chats: No such file or directory"))
    }
    var lines = [
      "## The envelope", "",
      "Under `--json`, every command of the three programs prints one object on stdout (also when it fails),",
      "written by `CommandContext`: `ok` and `exitCode` say how the command ended (the exit-code table is in",
      "docs/cli.md), `files` holds one entry per file worked on, with the command's `result` or the file's",
      "`error`, and `summary` counts the files (`files`, `ok`, `failed`) and sums the figures the command",
      "totals over them. An error that ended the whole command (no file was worked on) is the top-level",
      "`error`.", "",
      "| Field | JSON type |", "| --- | --- |",
    ]
    lines += table([one, all, failure], optional: ["files[].userId"]).filter { !$0.hasPrefix("| `files[].result.") }
    lines += [
      "",
      "A file has `result` (the command's, below) when `ok`, else `error`; `userId` is null when the file's",
      "owner is unknown (`--db` with another name). The top-level `error` is there only when the command",
      "failed before any file.", "",
      "One file (`\(commandPath) --user 42 --json`):", "", "```json", one.render(), "```", "",
      "`--all`, one file locked (exit 1):", "", "```json", all.render(), "```", "",
      "A failure before any file (exit 66):", "", "```json", failure.render(), "```",
    ]
    return lines.joined(separator: "\n") + "\n"
  }

  /// One section per runnable command under `root`: its result's fields and example(s).
  static func results(_ root: Command) -> String {
    var sections: [String] = []
    func walk(_ command: Command, _ path: [String]) {
      let path = path + [command.name]
      if command.run != nil {
        sections.append(section(command, path.joined(separator: " ")))
      }
      for child in command.subcommands { walk(child, path) }
    }
    walk(root, [])
    return sections.joined(separator: "\n")
  }

  static func section(_ command: Command, _ title: String) -> String {
    var encoded: [JSONValue] = []
    var optional: Set<String> = []
    for example in command.resultExamples() {
      // The examples are the types' own values: encoding them cannot fail.
      guard let (value, keys) = try? JSONValueEncoder().encodeWithOptionalKeys(example) else { continue }
      encoded.append(value)
      optional.formUnion(keys)
    }
    var lines = ["### \(title)", ""]
    if command.abstract.isEmpty == false { lines += [command.abstract, ""] }
    // One table when every example has the same fields; else one table per shape, each
    // with its example (e.g. `evict --dry-run`'s plan and what `evict` did).
    let shapes = encoded.map { table([$0], optional: optional) }
    let fields = Set(shapes.map { $0.map { $0.split(separator: "`").dropFirst().first ?? "" } })
    if fields.count <= 1 {
      let rows = table(encoded, optional: optional)
      lines += rows.isEmpty ? ["`result` is `{}`.", ""] : ["| Field | JSON type |", "| --- | --- |"] + rows + [""]
      lines.append(encoded.count > 1 ? "Examples of `result`:" : "Example of `result`:")
      for value in encoded { lines += ["", "```json", value.render(), "```"] }
    } else {
      lines.append("`result` takes \(encoded.count) shapes:")
      for (index, value) in encoded.enumerated() {
        lines += ["", "| Field | JSON type |", "| --- | --- |"] + shapes[index]
        lines += ["", "```json", value.render(), "```"]
      }
    }
    if let summary = command.summaryExample(),
      let (value, keys) = try? JSONValueEncoder().encodeWithOptionalKeys(summary)
    {
      lines += [
        "", "Members the command adds to the envelope's `summary`:", "", "| Field | JSON type |", "| --- | --- |",
      ]
      lines += table([value], optional: keys)
      lines += ["", "```json", value.render(), "```"]
    }
    return lines.joined(separator: "\n") + "\n"
  }

  /// `| \`path\` | type |` rows for every member of the objects in `values` (merged and
  /// sorted by path; `[]` marks an array's elements), "or null" where the type says the
  /// member is optional.
  static func table(_ values: [JSONValue], optional: Set<String>) -> [String] {
    var order: [String] = []
    var types: [String: [String]] = [:]
    func note(_ path: String, _ type: String) {
      if types[path] == nil { order.append(path) }
      if !(types[path]?.contains(type) ?? false) { types[path, default: []].append(type) }
    }
    func visit(_ value: JSONValue, _ path: String) {
      switch value {
      case .object(let members):
        for key in members.keys.sorted() {
          let child = path.isEmpty ? key : path + "." + key
          note(child, typeName(members[key]!))
          visit(members[key]!, child)
        }
      case .array(let elements):
        for element in elements {
          if case .object = element {} else { note(path + "[]", typeName(element)) }
          visit(element, path + "[]")
        }
      default: break
      }
    }
    for value in values { visit(value, "") }
    return order.sorted().map { path in
      var names = types[path]!
      if names.count > 1 { names.removeAll { $0 == "null" } }
      if optional.contains(path), !names.contains("null") { names.append("null") }
      return "| `\(path)` | \(names.joined(separator: " or ")) |"
    }
  }

  static func typeName(_ value: JSONValue) -> String {
    switch value {
    case .null: "null"
    case .bool: "boolean"
    case .int: "integer"
    case .double: "number"
    case .string: "string"
    case .array: "array"
    case .object: "object"
    }
  }
}
