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
    let space = try DiskSpace.of(path)
    if space.available < bytes + margin {
      throw StoreError(
        .diskSpace,
        "\(path): needs about \(ByteCount.format(bytes + margin)) free, only \(ByteCount.format(space.available)) available",
        path: path)
    }
  }
}
