import ChatCLI
import Foundation

/// The version printed by `chatdb --version`.
let chatdbVersion = "0.1.0"

let root = Command(
  name: "chatdb",
  abstract: "Storage management and maintenance for per-user chat databases (chats-<userId>.db).",
  subcommands: [MigrateCommand.command, GenerateCommand.command, ImportCommand.command, ExportCommand.command, UsageCommand.command, EvictCommand.command, IndexCommand.command, CheckCommand.command, VacuumCommand.command]
)

// A reader that goes away (`chatdb export -o - | head`) must make write(2) fail with
// EPIPE, reported as an error, instead of killing the process.
signal(SIGPIPE, SIG_IGN)

exit(CommandLineTool(root: root, version: chatdbVersion).main(Array(CommandLine.arguments.dropFirst()), stdout: .standardOutput, stderr: .standardError))
