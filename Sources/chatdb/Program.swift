import ChatCLI

/// The `chatdb` command tree (main.swift runs it; tests parse every help example through it).
enum ChatDBProgram {
  static let root = Command.group(
    name: "chatdb",
    abstract: "Storage management and maintenance for per-user chat databases (chats-<userId>.db).",
    subcommands: [
      Command(MigrateCommand.self, subcommands: [Command(MigrateStatusCommand.self)]), Command(GenerateCommand.self),
      Command(ImportCommand.self), Command(ExportCommand.self), Command(UsageCommand.self), Command(EvictCommand.self),
      IndexCommand.command, Command(CheckCommand.self), Command(VacuumCommand.self), Command(SearchCommand.self),
      PolicyCommand.command,
    ],
    examples: [
      "chatdb migrate --all", "chatdb usage --all --top 3", "chatdb evict --user 42 --older-than 1y --dry-run",
    ]
  )
}
