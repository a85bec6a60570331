import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Facts about the terminal the process is attached to.
public enum Terminal {
  /// Whether file descriptor `fd` is a terminal (`isatty`).
  public static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

  /// Whether standard output should be coloured: a terminal, `TERM` is not `dumb` and `NO_COLOR` is unset or empty.
  public static var supportsColor: Bool {
    supportsColor(environment: ProcessInfo.processInfo.environment, isTerminal: isTerminal(STDOUT_FILENO))
  }

  /// The colour decision for a given environment and terminal-ness (testable form of `supportsColor`).
  public static func supportsColor(environment: [String: String], isTerminal: Bool) -> Bool {
    isTerminal && environment["TERM"] != "dumb" && environment["NO_COLOR", default: ""].isEmpty
  }
}
