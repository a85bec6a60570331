import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatSync

/// Issue 29 through the real relay and `chat-sync`: two users with two devices each, the
/// relay dropping answers, duplicating events, closing sockets and killed once. Edits and
/// deletes from any device reach every device of both parties; a delete for everyone
/// leaves the text nowhere (each file and its WAL, and `relay.db`); a delete for me stays
/// on one device.
@Suite(.serialized, .ownThreads) struct EditAndDeleteSystemTests {
  /// The bytes of a database file and its `-wal`.
  static func bytes(of db: String) -> Data {
    (FileManager.default.contents(atPath: db) ?? Data()) + (FileManager.default.contents(atPath: db + "-wal") ?? Data())
  }

  @Test func editsAndDeletesReachEveryDeviceAndTheDeletedTextIsNowhere() async throws {
    try await withDataFolder { folder in
      let relay = try RelayProcess(
        folder: folder,
        faults: ["--faults", "drop-response=0.2,duplicate-event=0.2,close-socket=0.01", "--faults-seed", "29"])
      defer { relay.stop() }
      let adaToken = try relay.addUser(1, "Ada")
      let bobToken = try relay.addUser(2, "Bob")
      let adaPhone = try Client(user: 1, device: "phone", token: adaToken, relay: relay, folder: folder)
      let adaLaptop = try Client(user: 1, device: "laptop", relay: relay, folder: folder)
      let bobPhone = try Client(user: 2, device: "phone", token: bobToken, relay: relay, folder: folder)
      let bobLaptop = try Client(user: 2, device: "laptop", relay: relay, folder: folder)
      let devices = [adaPhone, adaLaptop, bobPhone, bobLaptop]
      defer { devices.forEach { $0.halt() } }

      for text in ["one qqoriginalword", "two for bob only", "three zzdeletedword", "four stays"] {
        #expect(try adaPhone.cli(["send", "--to", "2", text]).status == 0)
      }
      #expect(try bobPhone.cli(["send", "--to", "1", "hi from bob"]).status == 0)
      for device in devices { try device.start() }
      #expect(
        try await waitUntil(60) { try devices.allSatisfy { try $0.count("SELECT count(*) FROM Messages") == 5 } },
        "Ada's phone: \(adaPhone.log.suffix(1_500))")
      let ids = try adaPhone.messages("from_user_id = 1").map(\.id)
      let bobs = try adaPhone.messages("from_user_id = 2").map(\.id)
      try #require(ids.count == 4 && bobs.count == 1)

      // Ada edits her first message twice from her laptop and deletes her third for
      // everyone from her phone; Bob deletes the second on his laptop only.
      #expect(try adaLaptop.cli(["edit", "--message", String(ids[0]), "one, edited once"]).status == 0)
      #expect(try adaLaptop.cli(["edit", "--message", String(ids[0]), "one, edited twice"]).status == 0)
      try relay.kill9AndRestart()
      #expect(try adaPhone.cli(["delete", "--message", String(ids[2]), "--for-everyone"]).status == 0)
      #expect(try bobLaptop.cli(["delete", "--message", String(ids[1])]).status == 0)
      // Refused here, before anything is queued: another user's message, an unknown one.
      #expect(try bobPhone.cli(["edit", "--message", String(ids[3]), "not mine"]).status == 65)
      #expect(try bobPhone.cli(["delete", "--message", "12345", "--for-everyone"]).status == 66)

      let settled = try await waitUntil(90) {
        try devices.allSatisfy { device in
          try device.count("SELECT count(*) FROM Messages WHERE id = \(ids[0]) AND version = 2") == 1
            && device.count("SELECT count(*) FROM Messages WHERE id = \(ids[2]) AND deleted_at IS NOT NULL") == 1
            && device.count("SELECT count(*) FROM MessageChanges") == 0
        }
      }
      #expect(settled, "Bob's phone: \(bobPhone.log.suffix(2_000)) Ada's laptop: \(adaLaptop.log.suffix(2_000))")
      for device in devices {
        let name = "\(device.id)/\(device.name)"
        #expect(try device.messages("id = \(ids[0])").map(\.content) == ["one, edited twice"], "\(name)")
        #expect(
          try device.count("SELECT count(*) FROM MessageEdits WHERE message_id = \(ids[0])") == 2,
          "\(name): the edit history holds the original and the first edit")
        #expect(try device.messages("id = \(ids[2])").map(\.content) == [""], "\(name): a tombstone")
        #expect(try device.count("SELECT count(*) FROM Messages") == (device === bobLaptop ? 4 : 5), "\(name)")
        let history = try device.cli(["history", "--with", device.id == 1 ? "2" : "1", "--edits"])
        #expect(history.stdout.contains("(message deleted)") && history.stdout.contains("edited"), "\(history.stdout)")
      }
      // A device Ada adds after the edits fetches the edited message with its history,
      // the text as sent included, and the deleted one as a tombstone only.
      let adaTablet = try Client(user: 1, device: "tablet", relay: relay, folder: folder)
      defer { adaTablet.halt() }
      try adaTablet.start()
      #expect(
        try await waitUntil(60) { try adaTablet.count("SELECT count(*) FROM Messages") == 5 },
        "Ada's tablet: \(adaTablet.log.suffix(1_500))")
      let tabletHistory = try adaTablet.count(
        "SELECT count(*) FROM MessageEdits WHERE message_id = \(ids[0]) AND ((version = 0 AND content = 'one qqoriginalword') OR (version = 1 AND content = 'one, edited once'))"
      )
      #expect(tabletHistory == 2, "the tablet's edit history of the edited message")
      #expect(try adaTablet.count("SELECT count(*) FROM MessageEdits WHERE message_id = \(ids[2])") == 0)
      adaTablet.halt()
      #expect(Self.bytes(of: adaTablet.db).range(of: Data("zzdeletedword".utf8)) == nil)
      try chatdbCheck(adaTablet.db)

      // Bob's laptop keeps its delete for me through a catch-up after a restart.
      bobLaptop.halt()
      try bobLaptop.start()
      try await Task.sleep(for: .seconds(2))
      #expect(try bobLaptop.count("SELECT count(*) FROM Messages WHERE id = \(ids[1])") == 0)

      // The deleted text is nowhere: not in any device's file or WAL (each run erased it
      // and truncated its WAL), not in relay.db, not found by search.
      for device in devices {
        device.halt()
        let search = try device.cli(["search", "zzdeletedword", "--json"])
        #expect(search.status == 0 && search.stdout.contains(#""hits": []"#), "\(search.stdout)")
        #expect(
          Self.bytes(of: device.db).range(of: Data("zzdeletedword".utf8)) == nil,
          "\(device.id)/\(device.name): the deleted text is still in the file")
        #expect(Self.bytes(of: device.db).range(of: Data("four stays".utf8)) != nil, "a kept message is there")
        try chatdbCheck(device.db)
      }
      #expect(Self.bytes(of: bobLaptop.db).range(of: Data("two for bob only".utf8)) == nil)
      relay.stop()
      #expect(Self.bytes(of: relay.db).range(of: Data("zzdeletedword".utf8)) == nil, "relay.db keeps the text")
      #expect(Self.bytes(of: relay.db).range(of: Data("four stays".utf8)) != nil)
    }
  }
}
