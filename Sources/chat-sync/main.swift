import ChatCLI
import Foundation

// Placeholder until the commands land.
exit(0)
