import ChatCLI
import Foundation

let root = Command.group(
  name: "chatdb",
  abstract: "Storage management and maintenance for per-user chat databases (chats-<userId>.db).",
  subcommands: [
    Command(MigrateCommand.self, subcommands: [Command(MigrateStatusCommand.self)]), Command(GenerateCommand.self),
    Command(ImportCommand.self), Command(ExportCommand.self), Command(UsageCommand.self), Command(EvictCommand.self),
    IndexCommand.command, Command(CheckCommand.self), Command(VacuumCommand.self), Command(SearchCommand.self),
  ]
)

// A reader that goes away (`chatdb export -o - | head`) must make write(2) fail with
// EPIPE, which ends the command quietly, instead of killing the process.
signal(SIGPIPE, SIG_IGN)

exit(CommandLineTool(root: root, version: Release.version).main(Array(CommandLine.arguments.dropFirst())))
