import ChatCLI
import Foundation

// A closed pipe is an error to report, not a signal that kills the client mid-write.
signal(SIGPIPE, SIG_IGN)

exit(
  CommandLineTool(root: ChatSyncProgram.root, version: Release.version).main(Array(CommandLine.arguments.dropFirst())))
