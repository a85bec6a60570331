import ChatProtocol
import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatRelay

/// Devices are first-class: each has its own token and its own requestIds; a removed
/// device's token is refused. Store-level, through the binary, and against `serve`.
@Suite(.serialized, .ownThreads) struct RelayDeviceTests {
  // MARK: - Migration 0002

  @Test func aVersionOneTokenKeepsWorkingAsTheUsersFirstDevice() throws {
    try withTemporaryDirectory { dir in
      let path = dir + "/relay.db"
      let messageID: Int64 = 7_337_265_813_504_001
      do {
        // A version-1 file: the first migration only, a token per user, an idempotency
        // record of a user still there and one of a user removed since.
        let db = try Database(path: path, mode: .create)
        let migrator = Migrator(migrations: [RelaySchema.migrations[0]])
        let plan = try migrator.plan(for: try db.read { try migrator.status(of: $0) })
        _ = try migrator.apply(plan, to: db, owner: nil)
        try db.execute("INSERT INTO RelayUsers (id, name) VALUES (1, 'Ada'), (2, 'Grace')")
        for (user, token) in [(Int64(2), "token of grace"), (1, "token of ada")] {
          let digest = AccessToken.digest(token)
          try db.execute(
            "INSERT INTO RelayTokens (user_id, lookup_key, digest) VALUES (?, ?, ?)",
            [user, AccessToken.lookupKey(digest), digest])
        }
        try db.execute(
          "INSERT INTO RelayRequests (from_user_id, request_id, message_id, to_user_id, content, created_at) VALUES (1, 7, ?, 2, 'hi', ?), (9, 7, ?, 2, 'gone', ?)",
          [messageID, createdAt, messageID + 1, createdAt])
        #expect(Int(try db.int64("PRAGMA user_version") ?? 0) == 1)
      }
      let store = try RelayStore(path: path)
      #expect(try store.schemaVersion() == RelaySchema.latestVersion)
      #expect(try store.authenticate(token: "token of ada") == RelayCredential(user: 1, device: 1))
      #expect(try store.authenticate(token: "token of grace") == RelayCredential(user: 2, device: 2))
      let devices = try store.devices(of: 1)
      #expect(devices.map(\.name) == [RelayStore.firstDeviceName] && devices.first?.lastSeenAt == nil)
      #expect(Timestamp.milliseconds(from: devices.first?.createdAt ?? "") != nil)
      // The old record is the first device's: its retry replays.
      let retry = try store.post(from: 1, device: 1, requestID: 7, to: 2, content: "hi", createdAt: createdAt, now: 0)
      #expect(!retry.isNew && retry.message.messageId == messageID)
      let db = try Database(path: path, mode: .readOnly)
      #expect(try db.int64("SELECT count(*) FROM sqlite_schema WHERE name = 'RelayTokens'") == 0)
      #expect(try db.int64("SELECT device_id FROM RelayRequests WHERE from_user_id = 9") == 0)
      #expect(try db.query("PRAGMA foreign_key_check") { $0.int64(0) }.isEmpty)
    }
  }

  // MARK: - The store

  @Test func eachDeviceHasItsTokenAndItsRequestIDs() throws {
    try withRelay { store, _, tokens in
      let (laptop, token) = try store.addDevice(user: 1, name: "laptop", now: baseTime)
      #expect(laptop.userId == 1 && laptop.name == "laptop" && laptop.createdAt == createdAt)
      #expect(try store.authenticate(token: tokens[1]!) == RelayCredential(user: 1, device: 1))
      #expect(try store.authenticate(token: token) == RelayCredential(user: 1, device: laptop.id))
      let first = try store.post(
        from: 1, device: 1, requestID: 5, to: 2, content: "hi", createdAt: createdAt, now: baseTime)
      let other = try store.post(
        from: 1, device: laptop.id, requestID: 5, to: 2, content: "hi", createdAt: createdAt, now: baseTime)
      let again = try store.post(
        from: 1, device: laptop.id, requestID: 5, to: 2, content: "hi", createdAt: createdAt, now: baseTime)
      #expect(first.isNew && other.isNew && first.message.messageId != other.message.messageId)
      #expect(!again.isNew && again.message == other.message)
      // Rotating needs the device once there are several; the other device keeps its token.
      #expect(storeErrorKind { _ = try store.rotateToken(id: 1) } == .badInput)
      let rotated = try store.rotateToken(id: 1, device: laptop.id)
      #expect(try store.authenticate(token: token) == nil)
      #expect(try store.authenticate(token: rotated)?.device == laptop.id)
      #expect(try store.authenticate(token: tokens[1]!)?.device == 1)
      try store.removeDevice(user: 1, device: laptop.id)
      #expect(try store.authenticate(token: rotated) == nil)
      #expect(try store.devices(of: 1).map(\.id) == [1])
      #expect(storeErrorKind { try store.removeDevice(user: 1, device: laptop.id) } == .notFound)
      #expect(storeErrorKind { try store.removeDevice(user: 2, device: 1) } == .notFound)
      #expect(storeErrorKind { _ = try store.addDevice(user: 99, name: "x") } == .notFound)
      try store.setLastConnected(id: 1, device: 1, at: createdAt)
      #expect(try store.device(id: 1)?.lastSeenAt == createdAt)
    }
  }

  @Test func aDeviceRemovedByAnotherConnectionIsRefusedAtOnce() throws {
    try withRelay { store, path, _ in
      let (laptop, token) = try store.addDevice(user: 1, name: "laptop")
      store.groupsCalls = true
      #expect(try store.authenticate(token: token)?.device == laptop.id)
      #expect(try store.authenticate(token: token)?.device == laptop.id)  // remembered
      try store.commitGroup()
      try RelayStore(path: path).removeDevice(user: 1, device: laptop.id)
      #expect(try store.authenticate(token: token) == nil)
      try store.commitGroup()
    }
  }

  // MARK: - The binary

  @Test func deviceCommandsAddListAndRemove() throws {
    let folder = try Folder()
    let db = folder.path + "/relay.db"
    let add = try relay(["user", "add", "--db", db, "--id", "42", "--name", "Grace"])
    #expect(add.status == 0 && add.stdout.contains("with device 1"), "\(add.stdout)\(add.stderr)")
    let laptop = try relay(["device", "add", "--db", db, "--user", "42", "--name", "laptop", "--json"])
    #expect(laptop.status == 0, "\(laptop.stderr)")
    let result = try #require(Self.result(laptop.stdout))
    #expect(result["deviceId"] as? Int == 2 && result["name"] as? String == "laptop")
    #expect((result["token"] as? String)?.utf8.count == 43)

    let list = try relay(["device", "list", "--db", db, "--user", "42"])
    #expect(list.status == 0)
    #expect(list.stdout.contains("first device") && list.stdout.contains("laptop") && list.stdout.contains("never"))
    #expect(list.stdout.contains("2 device(s) of user 42"), "\(list.stdout)")
    let listed = try #require(Self.result(try relay(["device", "list", "--db", db, "--user", "42", "--json"]).stdout))
    let devices = try #require(listed["devices"] as? [[String: Any]])
    #expect(devices.map { $0["id"] as? Int } == [1, 2] && devices.allSatisfy { $0["lastSeenAt"] is NSNull })

    // Which device to rotate must be said once there are two.
    let ambiguous = try relay(["user", "token", "--db", db, "--id", "42"])
    #expect(ambiguous.status == 64 && ambiguous.stderr.contains("1 'first device', 2 'laptop'"), "\(ambiguous.stderr)")
    let rotate = try relay(["user", "token", "--db", db, "--id", "42", "--device", "2", "--json"])
    #expect(rotate.status == 0 && Self.result(rotate.stdout)?["deviceId"] as? Int == 2, "\(rotate.stderr)")

    for (arguments, message) in [
      (["device", "list", "--db", db, "--user", "7"], "Error: user 7 does not exist"),
      (["device", "add", "--db", db, "--user", "7", "--name", "x"], "Error: user 7 does not exist"),
      (["device", "remove", "--db", db, "--user", "42", "--device", "9"], "Error: device 9 of user 42 does not exist"),
      (["user", "token", "--db", db, "--id", "42", "--device", "9"], "Error: device 9 of user 42 does not exist"),
    ] {
      let failed = try relay(arguments)
      #expect(failed.status == 66 && failed.stderr.trimmingCharacters(in: .newlines) == message, "\(failed.stderr)")
    }
    let remove = try relay(["device", "remove", "--db", db, "--user", "42", "--device", "2"])
    #expect(remove.status == 0 && remove.stdout.contains("Removed device 2 of user 42"), "\(remove.stderr)")
    #expect(try relay(["device", "list", "--db", db, "--user", "42"]).stdout.contains("1 device(s) of user 42"))
    #expect(try relay(["user", "token", "--db", db, "--id", "42"]).status == 0, "one device left: no --device needed")
  }

  // MARK: - Against `serve`

  @Test func twoDevicesWorkAndARemovedOneIsRefused() throws {
    let folder = try Folder()
    let db = folder.path + "/relay.db"
    var tokens: [String] = []
    for (id, name) in [(1, "Ada"), (2, "Grace")] {
      let add = try relay(["user", "add", "--db", db, "--id", String(id), "--name", name])
      tokens.append(String(add.stdout.split(separator: "\n").last ?? ""))
    }
    let laptop = try relay(["device", "add", "--db", db, "--user", "1", "--name", "laptop"])
    #expect(laptop.status == 0, "\(laptop.stderr)")
    let adaTokens = [tokens[0], String(laptop.stdout.split(separator: "\n").last ?? "")]

    let server = try Server(db: db)
    defer { server.stop() }
    let facts = try Self.devices(port: server.port, tokens: adaTokens)
    #expect(facts.count == 2)
    for (index, fact) in facts.enumerated() {
      let me = fact["me"] as? [Any]
      let body = me?.last as? [String: Any]
      #expect(me?.first as? Int == 200)
      #expect((body?["user"] as? [String: Any])?["id"] as? Int == 1)
      let device = body?["device"] as? [String: Any]
      #expect(device?["id"] as? Int == (index == 0 ? 1 : 3))  // Grace's first device is 2
      #expect(device?["name"] as? String == (index == 0 ? "first device" : "laptop"))
      #expect(fact["upgrade"] as? Int == 101)
    }
    // The same requestId: one message per device, replayed on each device's retry.
    let posts = facts.map { ($0["posts"] as? [[Any]]) ?? [] }
    let ids = posts.map { $0.map { $0[1] as? Int } }
    #expect(posts.allSatisfy { $0.count == 2 && $0[0][0] as? Int == 201 && $0[1][0] as? Int == 201 })
    #expect(posts.allSatisfy { $0.count == 2 && $0[0][2] as? Bool == false && $0[1][2] as? Bool == true })
    #expect(ids.count == 2 && ids[0][0] == ids[0][1] && ids[1][0] == ids[1][1] && ids[0][0] != ids[1][0])

    // Each device's socket was seen.
    let list = try relay(["device", "list", "--db", db, "--user", "1", "--json"])
    let devices = (Self.result(list.stdout)?["devices"] as? [[String: Any]]) ?? []
    #expect(devices.count == 2 && devices.allSatisfy { $0["lastSeenAt"] is String }, "\(list.stdout)")

    // Removed while the relay runs (it remembered the token): refused from then on.
    #expect(try relay(["device", "remove", "--db", db, "--user", "1", "--device", "3"]).status == 0)
    let after = try Self.devices(port: server.port, tokens: adaTokens)
    #expect((after.first?["me"] as? [Any])?.first as? Int == 200)
    #expect(after.first?["upgrade"] as? Int == 101)
    #expect((after.last?["me"] as? [Any])?.first as? Int == 401)
    #expect((after.last?["posts"] as? [[Any]])?.allSatisfy { $0.first as? Int == 401 } == true)
    #expect(after.last?["upgrade"] as? Int == 401)
  }

  /// A device removed by `chat-relay device remove` while the relay runs has its open
  /// socket closed (1008) at the relay's next turn (a ping at the latest), not only its
  /// next request refused; the user's other device keeps its socket.
  @Test func aRemovedDevicesOpenSocketIsClosed() throws {
    let folder = try Folder()
    let db = folder.path + "/relay.db"
    let phone = try relay(["user", "add", "--db", db, "--id", "1", "--name", "Ada"])
    let laptop = try relay(["device", "add", "--db", db, "--user", "1", "--name", "laptop"])
    let tokens = [phone, laptop].map { String($0.stdout.split(separator: "\n").last ?? "") }
    let server = try Server(db: db, extra: ["--ping-seconds", "1"])
    defer { server.stop() }
    let holders = try tokens.map { try SocketHolder(port: server.port, token: $0) }
    #expect(try relay(["device", "remove", "--db", db, "--user", "1", "--device", "2"]).status == 0)
    #expect(holders[1].closeCode() == "1008")
    // The phone's socket stays open: the relay closes it when it stops.
    #expect(server.stop() == 0)
    #expect(holders[0].closeCode() == "1001")
  }

  /// `interop/relay_devices.py --hold`: a WebSocket held open until the relay closes it.
  final class SocketHolder {
    let process = Process()
    let output = Pipe()

    init(port: Int, token: String) throws {
      let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("interop/relay_devices.py").path
      process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
      process.arguments = [script, String(port), "--hold", token]
      process.standardOutput = output
      process.standardError = FileHandle.nullDevice
      try process.run()
      // Waits for "open" (the script gives up by itself after its timeouts).
      var line = Data()
      while !line.contains(UInt8(ascii: "\n")) {
        let chunk = output.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        line.append(chunk)
      }
      #expect(String(decoding: line, as: UTF8.self).hasPrefix("open"))
    }

    /// The close code the script printed once the socket closed (it exits by itself).
    func closeCode() -> String {
      let rest = output.fileHandleForReading.readDataToEndOfFile()
      process.waitUntilExit()
      return String(decoding: rest, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
  }

  /// `interop/relay_devices.py`'s facts, one object per token.
  static func devices(port: Int, tokens: [String]) throws -> [[String: Any]] {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .appendingPathComponent("interop/relay_devices.py").path
    let python = try run("/usr/bin/python3", [script, String(port)] + tokens)
    #expect(python.status == 0, "\(python.stderr)")
    return (try? JSONSerialization.jsonObject(with: Data(python.stdout.utf8)) as? [[String: Any]]) ?? []
  }

  /// The `result` of a `--json` envelope's one file.
  static func result(_ stdout: String) -> [String: Any]? {
    let envelope = try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any]
    return ((envelope?["files"] as? [[String: Any]])?.first)?["result"] as? [String: Any]
  }
}
