// chatdb-bench: in-process timings of ChatStore operations for scripts/bench.
// Not a user tool: it prints one JSON object per run for the script to tabulate.
import ChatCLI
import ChatStore
import Foundation

let root = Command.group(
  name: "chatdb-bench",
  abstract: "In-process timings of ChatStore operations, as JSON, for scripts/bench.",
  subcommands: [Command(ReadPathBench.self), Command(SearchBench.self)]
)

exit(CommandLineTool(root: root, version: Release.version).main(Array(CommandLine.arguments.dropFirst())))
