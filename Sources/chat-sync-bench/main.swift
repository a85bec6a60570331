// chat-sync-bench: drivers for scripts/bench.d/sync.sh, the sync client's speed figures.
// Not a user tool: each subcommand writes one JSON object for the script to tabulate.
import ChatCLI
import Foundation

let root = Command.group(
  name: "chat-sync-bench",
  abstract: "Drivers for the sync client's speed figures (scripts/bench.d/sync.sh), as JSON.",
  subcommands: [
    Command(SendBench.self), Command(StormBench.self), Command(TransferBench.self), Command(ThumbnailBench.self),
  ]
)

// A socket the relay closed under us is an error to handle, not a signal that kills the driver.
signal(SIGPIPE, SIG_IGN)

exit(CommandLineTool(root: root, version: Release.version).main(Array(CommandLine.arguments.dropFirst())))
