import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Where a user's chat database lives: `<dataDir>/chats-<userId>.db`.
///
/// The data folder comes from `--data-dir`, else `CHATDB_DATA_DIR`, else
/// `$XDG_DATA_HOME/chatdb`, else `~/.local/share/chatdb`. A user id is a positive
/// 64-bit integer written in plain decimal digits, so no path outside the data folder
/// can ever be formed from it.
public enum StoreLocation {
  /// The environment variable that names the default data folder.
  public static let environmentKey = "CHATDB_DATA_DIR"

  /// The data folder to use when none is given.
  public static func defaultDataDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
    if let dir = environment[environmentKey], !dir.isEmpty { return dir }
    if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty { return xdg + "/chatdb" }
    let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
    return home + "/.local/share/chatdb"
  }

  /// Parses a user id: 1 to 9223372036854775807, decimal digits only (no sign, no
  /// leading zero, no spaces). Returns nil for anything else.
  public static func parseUserID(_ text: String) -> Int64? {
    let bytes = Array(text.utf8)
    guard !bytes.isEmpty, bytes.count <= 19, bytes[0] != UInt8(ascii: "0"),
      bytes.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
    else { return nil }
    return Int64(text)
  }

  /// The file name of a user's database.
  public static func fileName(forUser id: Int64) -> String { "chats-\(id).db" }

  /// The path of a user's database inside `dataDirectory`.
  public static func path(forUser id: Int64, in dataDirectory: String) -> String {
    precondition(id > 0, "user ids are positive")
    return FileSystem.joinPath(dataDirectory, fileName(forUser: id))
  }

  /// The user id in a `chats-<id>.db` file name (any folder), or nil.
  public static func userID(fromFileName path: String) -> Int64? {
    let name = FileSystem.lastComponent(of: path)
    guard name.hasPrefix("chats-"), name.hasSuffix(".db") else { return nil }
    return parseUserID(String(name.dropFirst(6).dropLast(3)))
  }

  /// Every `chats-<id>.db` in `dataDirectory`, ordered by user id.
  public static func databaseFiles(in dataDirectory: String) throws -> [String] {
    let names: [String]
    do {
      names = try FileManager.default.contentsOfDirectory(atPath: dataDirectory)
    } catch {
      throw StoreError(
        FileSystem.exists(dataDirectory) ? .io : .notFound, "cannot read data folder \(dataDirectory)",
        path: dataDirectory)
    }
    return names.compactMap { name in userID(fromFileName: name).map { ($0, name) } }
      .sorted { $0.0 < $1.0 }
      .map { FileSystem.joinPath(dataDirectory, $0.1) }
      .filter(isFileOrFolder)
  }

  /// Keeps regular files and folders (a folder is reported as not a database);
  /// leaves out dangling links, which a write would create outside the data folder,
  /// and pipes or devices, whose open would block or write elsewhere.
  private static func isFileOrFolder(_ path: String) -> Bool {
    var info = stat()
    guard stat(path, &info) == 0 else { return false }
    let type = info.st_mode & S_IFMT
    return type == S_IFREG || type == S_IFDIR
  }
}
