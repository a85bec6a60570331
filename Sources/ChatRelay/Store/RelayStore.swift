import ChatProtocol
import ChatStore
import Foundation

/// The relay's durable state in one SQLite file, `relay.db`: users, their devices with
/// their tokens' digests, contacts, messages until their recipient acknowledges them,
/// idempotency records (by user, device and requestId), receipts waiting for their user,
/// and push records.
///
/// One `RelayStore` is one connection (WAL, `foreign_keys=ON`, see ChatStore's
/// `Database`), used from one thread or serial executor: like `Database` it is not
/// `Sendable`. Every write is one short `IMMEDIATE` transaction, so a crash leaves the
/// file before or after a call, never half-way through one. With ``groupsCalls`` on (the
/// serving relay's group commit) the calls instead join one transaction, opened by the
/// first and ended by ``commitGroup()``; each write is then a savepoint inside it, so a
/// failed call still leaves nothing behind.
///
/// ```swift
/// let store = try RelayStore(path: "relay.db")
/// let token = try store.addUser(id: 1, name: "Ada", avatarURL: nil)
/// try store.addUser(id: 2, name: "Grace", avatarURL: nil)
/// let sender = try store.authenticate(token: token)  // user 1, device 1 (its first)
/// let (message, isNew) = try store.post(
///   from: 1, requestID: 7, to: 2, content: "hi", createdAt: "2026-01-01T00:00:00.000Z", now: nowMs)
/// ```
///
/// Errors are `StoreError`: `.badInput` for a value the caller must fix (the message
/// names the field), `.notFound` for an unknown user, and SQLite failures translated by
/// `StoreError.from` (`.busy`, `.diskSpace`, `.writeFailed`…).
/// See <https://sqlite.org/wal.html> and <https://sqlite.org/lang_transaction.html>.
public final class RelayStore {
  /// The file the relay keeps its state in when no other is named.
  public static let defaultFileName = "relay.db"
  /// The most messages `undelivered(for:after:limit:)` returns at once.
  public static let maximumPageSize = 1_000
  /// The most UTF-8 bytes a message's content may have.
  public static let maximumContentBytes = ChatRepository.maximumContentBytes
  /// The most UTF-8 bytes of a user's name, avatar URL or a stored time text.
  public static let maximumFieldBytes = 2_048

  /// The connection. Internal: every change goes through the store's rules.
  let db: Database
  /// The file's path, as given.
  public let path: String

  /// Whether calls join one transaction (a group) until ``commitGroup()``, instead of
  /// each being its own: the relay commits once per service turn, answering the turn's
  /// requests only after that commit. Off by default.
  public var groupsCalls = false
  /// The number of the open group, nil when none is open.
  public private(set) var openGroup: Int?
  /// The number the next group gets.
  private var nextGroup = 1
  /// Tokens that authenticated, until another connection commits (``authenticate(token:)``).
  private var tokenCache = TokenCache()
  /// Checkpoints the WAL on its own thread once ``checkpointInBackground()`` started it.
  private var checkpointer: Checkpointer?
  private var commitsSinceCheckpoint = 0
  /// `PRAGMA data_version` when ``othersCommitted()`` last looked.
  private var seenDataVersion: Int64?
  /// Group commits between two background checkpoints: a few hundred WAL pages at most,
  /// so several run before SQLite's own automatic checkpoint (at 1,000 pages).
  static let commitsPerCheckpoint = 16
  /// WAL pages before this connection checkpoints itself (SQLite's default is 1,000).
  static let foregroundCheckpointPages = 4_000

  /// Opens the relay file at `path`, creating it (mode 0600) and its schema when
  /// missing, and applying the relay's pending migrations.
  ///
  /// Refuses, changing nothing, a path named like a user's chat file
  /// (`chats-<id>.db`), a file with tables whose `application_id` is not the relay's
  /// (`.schemaMismatch`), and a relay file newer than this binary (`.newerSchema`).
  ///
  /// `readOnly` (the listing commands): opens without creating, migrating or writing
  /// anything, so a file that is empty, damaged or not the relay's stays as it was.
  public init(path: String, readOnly: Bool = false) throws {
    try Self.refuseSpecialFile(path)
    if StoreLocation.userID(fromFileName: path) != nil {
      throw StoreError(
        .badInput,
        "\(path) is named like a user's chat database (chats-<id>.db); the relay keeps its state in its own file such as \(Self.defaultFileName)",
        path: path)
    }
    self.path = path
    do {
      let db = try Database(path: path, mode: readOnly ? .readOnly : .create)
      try Self.checkIdentity(of: db)
      let migrator = Migrator(migrations: RelaySchema.migrations)
      let status = try db.read { try migrator.status(of: $0) }
      let plan = try migrator.plan(for: status)
      if !plan.isEmpty {
        guard !readOnly else {
          throw StoreError(
            .olderSchema,
            "\(path) holds no relay data at the current schema ('chat-relay serve' or 'user add' brings it up to date)",
            path: path)
        }
        _ = try migrator.apply(plan, to: db, owner: nil)
      }
      // Text deleted for everyone, and messages past the retention window, leave no bytes
      // behind in the file: every cell and page freed is overwritten with zeros.
      if !readOnly { try db.execute("PRAGMA secure_delete = ON") }
      // Each call of a group commit runs in a savepoint, whose statement journal holds a
      // copy of every page the call changes again. On disk (past 64 KiB) that journal is
      // never truncated within the transaction: 21 pwrite calls a message, a fifth of
      // the relay's CPU under a sender's backlog. In memory it is emptied at each release.
      try db.execute("PRAGMA temp_store = MEMORY")
      self.db = db
    } catch {
      throw StoreError.from(error, path: path, doing: "open the relay store", otherwise: .readFailed)
    }
  }

  deinit { checkpointer?.close() }

  /// Refuses a pipe, socket or device at `path`: opening a pipe would block for ever,
  /// and the others are not databases (a folder is left to SQLite's own error).
  public static func refuseSpecialFile(_ path: String) throws {
    var info = stat()
    if stat(path, &info) == 0, info.st_mode & S_IFMT != S_IFREG, info.st_mode & S_IFMT != S_IFDIR {
      throw StoreError(
        .badInput, "\(path) is not a regular file (a pipe, socket or device); refusing to open it", path: path)
    }
  }

  /// Moves most of the WAL checkpointing off the calling thread: every
  /// ``commitsPerCheckpoint`` group commits a second connection on a background thread
  /// runs a `PASSIVE` checkpoint (which never blocks this connection's writes), copying
  /// the committed pages into the file and syncing it. SQLite's automatic checkpoint stays
  /// on for this connection: under steady writes a background checkpoint never catches up
  /// with the last commit, and only a checkpoint that does lets the next write restart
  /// the WAL from its start (without it the WAL grew by 50 MB a second in the bench). That
  /// one now finds all but the last pages copied and synced. Commits stay as durable as
  /// before (`synchronous` is unchanged; a checkpoint only moves committed pages).
  /// See <https://sqlite.org/wal.html#checkpointing>.
  public func checkpointInBackground() throws {
    guard checkpointer == nil else { return }
    do {
      checkpointer = try Checkpointer(path: path)
      try db.execute("PRAGMA wal_autocheckpoint = \(Self.foregroundCheckpointPages)")
    } catch {
      throw StoreError.from(error, path: path, doing: "open the checkpointing connection to")
    }
  }

  /// Checkpoints the whole WAL into the file and truncates it, so text erased by a delete
  /// (zeroed in the file by `secure_delete`) is not left in older WAL frames either.
  /// Returns why it could not (a reader held old frames), or nil.
  public func truncateLog() -> String? {
    do {
      let busy = try db.query("PRAGMA wal_checkpoint(TRUNCATE)", []) { $0.int64(0) }.first ?? 0
      return busy == 0 ? nil : "the WAL could not be truncated: a reader holds it"
    } catch {
      return "\(error)"
    }
  }

  /// A file with tables must carry the relay's `application_id`; an empty one is new.
  private static func checkIdentity(of db: Database) throws {
    let applicationID = try db.int64("PRAGMA application_id") ?? 0
    let tables =
      try db.int64("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'") ?? 0
    if applicationID == Int64(RelaySchema.applicationID) || (applicationID == 0 && tables == 0) { return }
    throw StoreError(
      .schemaMismatch,
      "\(db.path) is not a chat-relay file (application_id \(applicationID), expected \(RelaySchema.applicationID)); refusing to change it",
      path: db.path)
  }

  /// The schema version of the open file (`PRAGMA user_version`).
  public func schemaVersion() throws -> Int {
    try reading("read the schema version of") { Int(try $0.int64("PRAGMA user_version") ?? 0) }
  }

  // MARK: - Transactions

  /// Runs `body` in one `IMMEDIATE` transaction, or in a savepoint of the open group
  /// (see ``groupsCalls``); any error becomes a `StoreError`.
  ///
  /// `singleWrite`: `body` changes the file with one statement at most (after any
  /// checks), which SQLite applies whole or not at all, so in a group it needs no
  /// savepoint. (A savepoint copies each page it changes; with the 10,000 sockets of the
  /// bench opening, those copies left holes between lws's buffers: 10.0 instead of 5.9
  /// KiB of RSS per idle socket.)
  func writing<T>(_ action: String, singleWrite: Bool = false, _ body: (Database) throws -> T) throws -> T {
    do {
      guard groupsCalls else { return try db.write(body) }
      try beginGroupIfNeeded()
      return singleWrite ? try body(db) : try db.withSavepoint(body)
    } catch let conflict as RequestIDConflict {
      noteIfGroupLost()
      throw conflict
    } catch let refused as ChangeRefused {
      noteIfGroupLost()
      throw refused
    } catch {
      noteIfGroupLost()
      throw StoreError.from(error, path: path, doing: action)
    }
  }

  /// Runs `body` on one snapshot (the open group's, see ``groupsCalls``); any error
  /// becomes a `StoreError`.
  func reading<T>(_ action: String, _ body: (Database) throws -> T) throws -> T {
    do {
      guard groupsCalls else { return try db.read(body) }
      try beginGroupIfNeeded()
      return try body(db)
    } catch {
      noteIfGroupLost()
      throw StoreError.from(error, path: path, doing: action, otherwise: .readFailed)
    }
  }

  /// Commits the open group, if any, and returns its number (nil when none was open).
  /// A failed commit rolls the group back and throws: none of its calls happened.
  @discardableResult
  public func commitGroup() throws -> Int? {
    guard let group = openGroup else { return nil }
    openGroup = nil
    guard db.isInTransaction else {
      throw StoreError(.writeFailed, "the transaction of group \(group) was rolled back by SQLite", path: path)
    }
    do {
      try db.commit()
      if let checkpointer {
        commitsSinceCheckpoint += 1
        if commitsSinceCheckpoint >= Self.commitsPerCheckpoint {
          commitsSinceCheckpoint = 0
          checkpointer.request()
        }
      }
      return group
    } catch {
      db.rollback()
      throw StoreError.from(error, path: path, doing: "commit to")
    }
  }

  /// Opens a group (`BEGIN IMMEDIATE`: the write lock is taken here, where
  /// `busy_timeout` can wait) unless one is open.
  private func beginGroupIfNeeded() throws {
    if openGroup != nil && db.isInTransaction { return }
    openGroup = nil
    try db.beginTransaction(.immediate)
    openGroup = nextGroup
    nextGroup += 1
  }

  /// Some errors (`SQLITE_FULL`, `SQLITE_IOERR`, …) make SQLite roll back the whole
  /// transaction: the group is then gone, and with it its earlier calls.
  private func noteIfGroupLost() {
    if openGroup != nil && !db.isInTransaction { openGroup = nil }
  }

  /// Now, in milliseconds since 1970: the default clock of the calls that record a time.
  public static func currentMilliseconds() -> Int64 {
    Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
  }

  // MARK: - Checks

  func requireUser(_ id: Int64, _ db: Database, role: String = "user") throws {
    guard try db.int64(RelayQuery.userExists, [id]) == 1 else {
      throw StoreError(.notFound, "\(role) \(id) does not exist", path: path)
    }
  }

  func requireText(
    _ text: String, field: String, maximumBytes: Int = RelayStore.maximumFieldBytes, allowEmpty: Bool = false
  ) throws {
    let count = text.utf8.count
    if count == 0 && !allowEmpty { throw StoreError(.badInput, "\(field) must not be empty", path: path) }
    if count > maximumBytes {
      throw StoreError(.badInput, "\(field) has \(count) bytes; at most \(maximumBytes) are allowed", path: path)
    }
  }
}

@available(*, unavailable)
extension RelayStore: Sendable {}

/// A second connection to the relay's file that runs `PASSIVE` checkpoints on its own
/// serial queue when asked; requests made while one is pending are merged.
// @unchecked: `db` is only used on `queue`, and `pending` behind its `Locked`.
final class Checkpointer: @unchecked Sendable {
  private let queue = DispatchQueue(label: "chat-relay.checkpoint", qos: .utility)
  private var db: Database?
  private let pending = Locked(false)

  init(path: String) throws {
    db = try Database(path: path, mode: .readWrite)
  }

  /// Runs a checkpoint soon on the queue, unless one is already waiting to run.
  func request() {
    let first = pending.withLock { waiting -> Bool in
      defer { waiting = true }
      return !waiting
    }
    guard first else { return }
    queue.async { [self] in
      pending.withLock { $0 = false }
      // A failure (the file busy, the disk full) is retried at the next request; the WAL
      // only grows meanwhile, as it would under SQLite's own checkpoint.
      try? db?.execute("PRAGMA wal_checkpoint(PASSIVE)")
    }
  }

  /// Waits for a running checkpoint and closes the connection.
  func close() {
    queue.sync { db = nil }
  }
}

/// Devices of tokens that authenticated, by the digest's lookup key, valid for one
/// `PRAGMA data_version` of the file (see ``RelayStore/authenticate(token:)``).
struct TokenCache {
  /// The most tokens remembered; past it the memory starts again empty.
  static let capacity = 100_000
  var dataVersion: Int64?
  var owners: [Int64: (owner: RelayCredential, digest: [UInt8])] = [:]

  mutating func forget(dataVersion: Int64?) {
    self.dataVersion = dataVersion
    owners.removeAll()
  }

  mutating func remember(_ key: Int64, owner: RelayCredential, digest: [UInt8]) {
    if owners.count >= Self.capacity { owners.removeAll() }
    owners[key] = (owner, digest)
  }
}

// MARK: - Users and tokens

extension RelayStore {
  /// Reads `RelayQuery.userByID` rows: id, name, avatar_url, last_connected_at.
  private static func user(_ row: Row) -> RelayUser {
    RelayUser(
      id: row.int64(0), name: row.string(1), avatarURL: row.optionalString(2), lastConnectedAt: row.optionalString(3))
  }

  /// The name of the device ``addUser(id:name:avatarURL:)`` makes (and migration 0002
  /// gave each existing token).
  public static let firstDeviceName = "first device"

  /// Adds a user with their first device (``firstDeviceName``) and returns that
  /// device's bearer token.
  ///
  /// The token (32 random bytes, base64url without padding) is returned once and
  /// never stored: only its SHA-256 is. `id` must be positive and unused
  /// (`.badInput` naming it otherwise); `name` is 1 to 2,048 bytes, `avatarURL` at
  /// most 2,048. An id once removed may be added again; its devices are new ones, so
  /// the old user's idempotency records (kept, by device) are never met again.
  @discardableResult
  public func addUser(id: Int64, name: String, avatarURL: String?, now: Int64 = RelayStore.currentMilliseconds())
    throws -> String
  {
    guard id > 0 else { throw StoreError(.badInput, "user id \(id) must be positive", path: path) }
    try requireText(name, field: "name")
    if let avatarURL { try requireText(avatarURL, field: "avatarURL", allowEmpty: true) }
    let token = try AccessToken.generate()
    tokenCache.forget(dataVersion: nil)
    try writing("add user \(id) to") { db in
      guard try db.int64(RelayQuery.userExists, [id]) == 0 else {
        throw StoreError(.badInput, "user \(id) already exists", path: path)
      }
      try db.execute("INSERT INTO RelayUsers (id, name, avatar_url) VALUES (?, ?, ?)", [id, name, avatarURL])
      _ = try insertDevice(user: id, name: Self.firstDeviceName, token: token, now: now, db)
    }
    return token
  }

  /// Adds a device to user `user` and returns it with its bearer token (shown once,
  /// stored as SHA-256 only). `name` is 1 to 2,048 bytes; `.notFound` for an unknown user.
  public func addDevice(user: Int64, name: String, now: Int64 = RelayStore.currentMilliseconds()) throws -> (
    device: RelayDevice, token: String
  ) {
    try requireText(name, field: "name")
    let token = try AccessToken.generate()
    tokenCache.forget(dataVersion: nil)
    let device = try writing("add a device to user \(user) in") { db in
      try requireUser(user, db)
      return try insertDevice(user: user, name: name, token: token, now: now, db)
    }
    return (device, token)
  }

  private func insertDevice(user: Int64, name: String, token: String, now: Int64, _ db: Database) throws
    -> RelayDevice
  {
    let digest = AccessToken.digest(token)
    let createdAt = Timestamp.string(milliseconds: now)
    // A new device has acknowledged nothing, yet holds back nothing written before it
    // existed (retention 0): its acknowledged place starts at the newest id and update.
    let lastMessage = try db.int64(RelayQuery.lastMessageID) ?? 0
    let lastUpdate = try db.int64(RelayQuery.lastUpdateOf, [user]) ?? 0
    try db.execute(
      "INSERT INTO RelayDevices (user_id, name, created_at, lookup_key, digest, synced_message, synced_update) VALUES (?, ?, ?, ?, ?, ?, ?)",
      [user, name, createdAt, AccessToken.lookupKey(digest), digest, lastMessage, lastUpdate])
    return RelayDevice(
      id: db.lastInsertRowID, userId: user, name: name, createdAt: createdAt, lastSeenAt: nil,
      syncedMessage: lastMessage, lag: 0)
  }

  /// Reads `RelayQuery.devicesOfUser` and `.deviceByID` rows.
  private static func device(_ row: Row) -> RelayDevice {
    RelayDevice(
      id: row.int64(0), userId: row.int64(1), name: row.string(2), createdAt: row.string(3),
      lastSeenAt: row.optionalString(4), syncedMessage: row.int64(5), lag: 0)
  }

  /// User `user`'s devices, by id. `.notFound` for an unknown user.
  public func devices(of user: Int64) throws -> [RelayDevice] {
    try reading("read the devices of user \(user) in") { db in
      try requireUser(user, db)
      var devices = try db.query(RelayQuery.devicesOfUser, [user], Self.device)
      for index in devices.indices {
        devices[index].lag = try db.int64(RelayQuery.logCountAbove, [user, devices[index].syncedMessage]) ?? 0
      }
      return devices
    }
  }

  /// Device `id`, or nil.
  public func device(id: Int64) throws -> RelayDevice? {
    try reading("read device \(id) from") { db in try db.query(RelayQuery.deviceByID, [id], Self.device).first }
  }

  /// The device `device` of user `user`, or `.notFound` naming which is unknown.
  private func requireDevice(_ device: Int64, of user: Int64, _ db: Database) throws {
    try requireUser(user, db)
    guard try db.query(RelayQuery.deviceByID, [device], Self.device).first?.userId == user else {
      throw StoreError(.notFound, "device \(device) of user \(user) does not exist", path: path)
    }
  }

  /// Removes device `device` of user `user`: its token stops authenticating at once (in
  /// this process, and in a serving relay at its next check, see
  /// ``authenticate(token:)``). Its idempotency records stay. `.notFound` for an unknown
  /// user, or a device that is not theirs.
  public func removeDevice(user: Int64, device: Int64) throws {
    tokenCache.forget(dataVersion: nil)
    try writing("remove device \(device) of user \(user) from") { db in
      try requireDevice(device, of: user, db)
      try db.execute("DELETE FROM RelayDevices WHERE id = ?", [device])
    }
  }

  /// Replaces the token of device `device` of user `id` with a new one and returns it:
  /// the old token stops authenticating at once. Without `device`, the user's only
  /// device (`.badInput` listing them when there are several). `.notFound` for an
  /// unknown user or device.
  public func rotateToken(id: Int64, device: Int64? = nil) throws -> String {
    let token = try AccessToken.generate()
    tokenCache.forget(dataVersion: nil)
    try writing("rotate a token of user \(id) in") { db in
      let target: Int64
      if let device {
        try requireDevice(device, of: id, db)
        target = device
      } else {
        try requireUser(id, db)
        let devices = try db.query(RelayQuery.devicesOfUser, [id], Self.device)
        guard devices.count == 1, let only = devices.first else {
          throw StoreError(
            .badInput,
            devices.isEmpty
              ? "user \(id) has no device ('chat-relay device add' gives them one)"
              : "user \(id) has \(devices.count) devices (\(Self.describe(devices))); name one",
            path: path)
        }
        target = only.id
      }
      let digest = AccessToken.digest(token)
      try db.execute(
        "UPDATE RelayDevices SET lookup_key = ?, digest = ? WHERE id = ?",
        [AccessToken.lookupKey(digest), digest, target])
    }
    return token
  }

  /// `1 'phone', 2 'laptop'`: devices as an error message lists them.
  public static func describe(_ devices: [RelayDevice]) -> String {
    devices.map { "\($0.id) '\($0.name)'" }.joined(separator: ", ")
  }

  /// Removes a user. `.notFound` for an unknown user.
  ///
  /// Gone with them: their devices and tokens, the messages waiting for them (no one could ever
  /// acknowledge them), the receipts waiting for them, their read marks and their
  /// contact pairs (so nobody sees their profile any more). Kept: messages they sent
  /// that are not yet delivered (the recipients still get them), every idempotency
  /// record (a retry still gets its message) and push records (a log).
  public func removeUser(id: Int64) throws {
    tokenCache.forget(dataVersion: nil)
    try writing("remove user \(id) from") { db in
      try requireUser(id, db)
      try db.execute("DELETE FROM RelayDevices WHERE user_id = ?", [id])
      try db.execute("DELETE FROM RelayMessages WHERE to_user_id = ?", [id])
      try db.execute("DELETE FROM RelayStatusUpdates WHERE user_id = ?", [id])
      try db.execute("DELETE FROM RelayReadMarks WHERE reader_id = ?1 OR sender_id = ?1", [id])
      try db.execute("DELETE FROM RelayContacts WHERE user_id = ?1 OR contact_id = ?1", [id])
      try db.execute("DELETE FROM RelayUsers WHERE id = ?", [id])
    }
  }

  /// Every user, by id.
  public func users() throws -> [RelayUser] {
    try reading("read the users of") { db in
      try db.query("SELECT id, name, avatar_url, last_connected_at FROM RelayUsers ORDER BY id", [], Self.user)
    }
  }

  /// The user with `id`, or nil.
  public func user(id: Int64) throws -> RelayUser? {
    try reading("read user \(id) from") { db in
      try db.query(RelayQuery.userByID, [id], Self.user).first
    }
  }

  /// The user and device whose token `token` is, or nil.
  ///
  /// The token's SHA-256 is found by its first 8 bytes (an indexed, non-secret key)
  /// and then compared whole with `CRYPTO_memcmp`, whose time does not depend on
  /// where two digests differ. Text longer than 256 bytes is no token.
  /// See <https://docs.openssl.org/3.0/man3/CRYPTO_memcmp/>.
  ///
  /// Tokens that matched are remembered (digest and owner, by the same key, compared the
  /// same way) for as long as the file's `PRAGMA data_version` says no other connection
  /// committed: a token rotated, a device or a user removed by `chat-relay user …` or
  /// `device …` in another process empties the memory before the next check, and so do
  /// this store's own calls that change devices.
  /// See <https://sqlite.org/pragma.html#pragma_data_version>.
  public func authenticate(token: String) throws -> RelayCredential? {
    guard !token.isEmpty, token.utf8.count <= AccessToken.maximumLength else { return nil }
    let digest = AccessToken.digest(token)
    let key = AccessToken.lookupKey(digest)
    return try reading("authenticate against") { db in
      let version = try db.int64("PRAGMA data_version") ?? 0
      if version != tokenCache.dataVersion { tokenCache.forget(dataVersion: version) }
      if let known = tokenCache.owners[key], AccessToken.digestsMatch(known.digest, digest) { return known.owner }
      let candidates = try db.query(RelayQuery.tokensByLookupKey, [key]) { row in
        (RelayCredential(user: row.int64(0), device: row.int64(1)), row.value(2))
      }
      var match: RelayCredential?
      for (owner, stored) in candidates {
        guard case .blob(let bytes) = stored else { continue }
        if AccessToken.digestsMatch(bytes, digest) { match = owner }
      }
      if let match { tokenCache.remember(key, owner: match, digest: digest) }
      return match
    }
  }

  /// Records when a user last connected (`at`, ISO 8601 by convention), and with
  /// `device` when that device was last seen. `.notFound` for an unknown user.
  public func setLastConnected(id: Int64, device: Int64? = nil, at: String) throws {
    try requireText(at, field: "lastConnectedAt")
    try writing("record the last connection of user \(id) in", singleWrite: device == nil) { db in
      try requireUser(id, db)
      try db.execute("UPDATE RelayUsers SET last_connected_at = ? WHERE id = ?", [at, id])
      if let device {
        try db.execute("UPDATE RelayDevices SET last_seen_at = ? WHERE id = ? AND user_id = ?", [at, device, id])
      }
    }
  }

  /// Whether another connection committed to the file since the last call (the first
  /// call answers true): `PRAGMA data_version`, read outside any group (it opens none).
  /// See <https://sqlite.org/pragma.html#pragma_data_version>.
  func othersCommitted() -> Bool {
    guard let version = try? db.int64("PRAGMA data_version") else { return false }
    defer { seenDataVersion = version }
    return version != seenDataVersion
  }

  /// Of `devices`, those the file no longer holds (removed, or their user removed). Read
  /// outside any group, like ``othersCommitted()``: for the end of a turn, after its commit.
  func missingDevices(among devices: Set<Int64>) throws -> Set<Int64> {
    var missing: Set<Int64> = []
    for device in devices where try db.query(RelayQuery.deviceByID, [device], Self.device).isEmpty {
      missing.insert(device)
    }
    return missing
  }

  /// Records when device `device` was last seen (`at`, ISO 8601 by convention); an
  /// unknown device changes nothing.
  public func setLastSeen(device: Int64, at: String) throws {
    try requireText(at, field: "lastSeenAt")
    try writing("record when device \(device) was last seen in", singleWrite: true) { db in
      try db.execute("UPDATE RelayDevices SET last_seen_at = ? WHERE id = ?", [at, device])
    }
  }

  // MARK: - Contacts

  /// The users `user` exchanged a message with (either direction), by id.
  public func contacts(of user: Int64) throws -> [Int64] {
    try reading("read the contacts of user \(user) in") { db in
      try db.query(RelayQuery.contactsOf, [user]) { $0.int64(0) }
    }
  }

  /// Whether `viewer` may see `user`'s profile: themselves, or a contact.
  public func canSee(viewer: Int64, user: Int64) throws -> Bool {
    if viewer == user { return true }
    return try reading("read the contacts of user \(viewer) in") { db in
      try db.int64(RelayQuery.contactExists, [viewer, user]) == 1
    }
  }
}
