import ChatCLI
import Foundation

// A reader that goes away (`chatdb export -o - | head`) must make write(2) fail with
// EPIPE, which ends the command quietly, instead of killing the process.
signal(SIGPIPE, SIG_IGN)

exit(CommandLineTool(root: ChatDBProgram.root, version: Release.version).main(Array(CommandLine.arguments.dropFirst())))
