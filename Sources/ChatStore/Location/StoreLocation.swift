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
  public static func defaultDataDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String
  {
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

  // MARK: - Links out of the data folder

  /// Refuses a file chosen through the data folder (`--user`, `--all`) that is a
  /// symbolic link whose target resolves outside that folder: a link planted in the
  /// folder must not make a command read, rewrite or create a file elsewhere. A link to
  /// another file inside the folder is followed. A path the user names with `--db` is
  /// never checked: that choice is the user's own.
  ///
  /// Throws `.badInput` (exit 65) naming the file and where the link leads. The check is
  /// made before the file is opened; a link swapped in between is not caught (the data
  /// folder is 0700, so only its owner could do that).
  /// See <https://man7.org/linux/man-pages/man3/realpath.3.html>.
  public static func requireInsideDataFolder(_ path: String, dataDirectory: String) throws {
    var info = stat()
    guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK else { return }
    let target = resolvedLinkTarget(path)
    if let target, let folder = realPath(dataDirectory) {
      let prefix = folder == "/" ? "/" : folder + "/"
      if target.hasPrefix(prefix) { return }
    }
    throw StoreError(
      .badInput,
      "\(path) is a symbolic link to \(target ?? linkText(path) ?? "?"), outside the data folder \(dataDirectory); "
        + "refusing to follow it (name the file with --db to use it)",
      path: path)
  }

  /// `realpath(3)` of an existing path, or nil.
  static func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }

  /// What a symbolic link says (`readlink(2)`), or nil when `path` is not one.
  static func linkText(_ path: String) -> String? {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let count = readlink(path, &buffer, buffer.count - 1)
    guard count >= 0 else { return nil }
    return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// The absolute, link-free path a symbolic link leads to, also when its last target
  /// does not exist yet (a dangling link, which a command that creates the file would
  /// follow); nil when even the folder it leads into cannot be resolved.
  static func resolvedLinkTarget(_ path: String) -> String? {
    if let resolved = realPath(path) { return resolved }
    // Dangling: follow the chain by hand (at most 40 links, as the kernel does), then
    // resolve the folder of the last name.
    var current = path
    for _ in 0..<40 {
      guard let text = linkText(current) else { break }
      current = text.hasPrefix("/") ? text : FileSystem.joinPath(FileSystem.parentFolder(of: current), text)
    }
    if linkText(current) != nil { return nil }
    let (folder, name) = FileSystem.splitPath(current)
    guard !name.isEmpty, name != ".", name != "..", let resolvedFolder = realPath(folder) else { return nil }
    return FileSystem.joinPath(resolvedFolder, name)
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
