import ChatCLI
import ChatStore
import Foundation

/// Free-space checks before a command writes a lot.
enum Preflight {
  /// Room kept free beyond an estimate.
  static let margin: Int64 = 16 << 20

  /// Refuses when the file system that will hold `path` has less than `bytes` (plus a
  /// margin) available to this user.
  static func requireSpace(_ bytes: Int64, toWrite path: String) throws {
    try DiskSpace.require(bytes + margin, in: path, for: path, to: "writing it")
  }
}
