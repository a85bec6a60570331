import ChatCLI
import Foundation

// A closed pipe is an error to report, not a signal that kills the relay.
signal(SIGPIPE, SIG_IGN)

exit(
  CommandLineTool(root: ChatRelayProgram.root, version: Release.version).main(Array(CommandLine.arguments.dropFirst())))
