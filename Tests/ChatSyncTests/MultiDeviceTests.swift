import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatSync

/// Issue 27: every device of a user gets every message its user sent or received, through
/// the relay's faults and kill -9s, with the same ids in the same order everywhere.
@Suite(.serialized, .ownThreads) struct MultiDeviceTests {
  @Test func everyDeviceOfBothUsersGetsEveryMessageExactlyOnce() async throws {
    try await withDataFolder { folder in
      let relay = try RelayProcess(
        folder: folder,
        faults: ["--faults", "drop-response=0.1,duplicate-event=0.1,close-socket=0.005", "--faults-seed", "27"])
      defer { relay.stop() }
      let adaToken = try relay.addUser(1, "Ada")
      let bobToken = try relay.addUser(2, "Bob")
      let adaPhone = try Client(user: 1, device: "phone", token: adaToken, relay: relay, folder: folder)
      let adaLaptop = try Client(user: 1, device: "laptop", relay: relay, folder: folder)
      let adaTablet = try Client(user: 1, device: "tablet", relay: relay, folder: folder)
      let bobPhone = try Client(user: 2, device: "phone", token: bobToken, relay: relay, folder: folder)
      let bobLaptop = try Client(user: 2, device: "laptop", relay: relay, folder: folder)
      let devices = [adaPhone, adaLaptop, adaTablet, bobPhone, bobLaptop]
      defer { devices.forEach { $0.halt() } }

      // Each device writes its share: its first message through `send` (which makes the
      // file and the contact), the rest into its outbox while everything runs.
      let shares = [(adaPhone, 150), (adaLaptop, 100), (adaTablet, 50), (bobPhone, 100), (bobLaptop, 100)]
      let total = shares.reduce(0) { $0 + $1.1 }
      for (device, _) in shares {
        let to = device.id == 1 ? "2" : "1"
        #expect(try device.cli(["send", "--to", to, "\(device.id)-\(device.name)-000"]).status == 0)
      }
      for device in devices { try device.start() }
      for round in 0..<10 {
        for (device, count) in shares {
          let outbox = try ChatRepository.open(user: device.id, in: device.folder)
          let step = count / 10
          for i in max(1, round * step)..<((round + 1) * step) {
            _ = try outbox.send(
              to: device.id == 1 ? 2 : 1, content: String(format: "%d-%@-%03d", device.id, device.name, i))
          }
          _ = Nudge.send("outbox", to: device.db)
        }
        if round == 3 || round == 7 { try relay.kill9AndRestart() }
        if round >= 4 && round < 9 {
          // Each device's run dies once mid-way (kill -9) and comes back.
          let device = devices[round - 4]
          device.halt()
          try device.start()
        }
        try await Task.sleep(for: .milliseconds(100))
      }
      let arrived = try await waitUntil(180) {
        try devices.allSatisfy {
          try $0.count("SELECT count(*) FROM Messages") == total
            && $0.count("SELECT count(*) FROM MessageRequests") == 0
        }
      }
      let counts = try devices.map { "\($0.id)/\($0.name): \(try $0.count("SELECT count(*) FROM Messages"))" }
      #expect(arrived, "messages per device: \(counts); Ada's phone: \(adaPhone.log.suffix(2_000))")

      // The same ids, senders and contents, in the same order, on every device.
      let reference = try adaPhone.allMessages().map { "\($0.id) \($0.from) \($0.content)" }
      #expect(reference.count == total && Set(reference).count == total)
      for device in devices.dropFirst() {
        #expect(
          try device.allMessages().map { "\($0.id) \($0.from) \($0.content)" } == reference,
          "\(device.id)/\(device.name) differs from Ada's phone")
      }
      // Own messages sent elsewhere are there as sent, with no request id of this device.
      #expect(try adaLaptop.count("SELECT count(*) FROM Messages WHERE from_user_id = 1") == 300)
      #expect(
        try adaLaptop.count(
          "SELECT count(*) FROM Messages WHERE from_user_id = 1 AND request_id IS NOT NULL AND content NOT LIKE '1-laptop-%'"
        )
          == 0)

      // Bob reads on his laptop: his phone's unread count clears, and every device of Ada
      // shows her messages READ.
      #expect(try bobLaptop.cli(["read", "--with", "1"]).status == 0)
      let read = try await waitUntil(60) {
        try bobPhone.count("SELECT count(*) FROM Messages WHERE from_user_id = 1 AND status <> 'READ'") == 0
          && [adaPhone, adaLaptop, adaTablet].allSatisfy {
            try $0.count("SELECT count(*) FROM Messages WHERE from_user_id = 1 AND status <> 'READ'") == 0
          }
      }
      #expect(read, "Bob's phone: \(bobPhone.log.suffix(1_500))")
      // Ada reads on her tablet: her other devices' unread counts clear, Bob's devices show READ.
      #expect(try adaTablet.cli(["read", "--with", "2"]).status == 0)
      let readByAda = try await waitUntil(60) {
        try [adaPhone, adaLaptop].allSatisfy {
          try $0.count("SELECT count(*) FROM Messages WHERE from_user_id = 2 AND status <> 'READ'") == 0
        }
          && [bobPhone, bobLaptop].allSatisfy {
            try $0.count("SELECT count(*) FROM Messages WHERE from_user_id = 2 AND status <> 'READ'") == 0
          }
      }
      #expect(readByAda, "Ada's phone: \(adaPhone.log.suffix(1_500))")
      for device in devices {
        #expect(try device.count("SELECT coalesce(sum(unread_count), 0) FROM ConversationSummaries") == 0)
      }
      // And Bob's messages are delivered on both of Bob's devices.
      #expect(
        try await waitUntil(60) {
          try [bobPhone, bobLaptop].allSatisfy {
            try $0.count("SELECT count(*) FROM Messages WHERE from_user_id = 2 AND status = 'SYNCED'") == 0
          }
        })

      // A device added now gets the whole history the relay retains, and every status.
      let bobTablet = try Client(user: 2, device: "tablet", relay: relay, folder: folder)
      try bobTablet.start()
      defer { bobTablet.halt() }
      #expect(try await waitUntil(60) { try bobTablet.count("SELECT count(*) FROM Messages") == total })
      #expect(try bobTablet.allMessages().map { "\($0.id) \($0.from) \($0.content)" } == reference)
      #expect(try bobTablet.count("SELECT count(*) FROM Messages WHERE from_user_id = 1 AND status <> 'READ'") == 0)
      #expect(try bobTablet.count("SELECT count(*) FROM MessageRequests") == 0, "it resends nothing")

      // Removing a device: its run is refused (401) and stops; the others go on.
      let list = try tool("chat-relay", ["device", "list", "--db", relay.db, "--user", "1", "--json"])
      let tabletID = try #require(
        (try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any]).flatMap {
          (($0["files"] as? [[String: Any]])?.first?["result"] as? [String: Any])?["devices"] as? [[String: Any]]
        }?.first { $0["name"] as? String == "tablet" }?["id"] as? Int)
      let removed = try tool(
        "chat-relay", ["device", "remove", "--db", relay.db, "--user", "1", "--device", String(tabletID)])
      #expect(removed.status == 0, "\(removed.stderr)")
      #expect(await waitUntil(30) { !(adaTablet.running?.process.isRunning ?? false) })
      #expect(adaTablet.halt(SIGTERM) != 0, "a refused token ends the run with an error")

      for device in devices + [bobTablet] where device !== adaTablet { #expect(device.halt(SIGTERM) == 0) }

      // Older history from another device: Ada's phone's export (with a request still in its
      // outbox) imported on a new device, whose first sync then overlaps it entirely.
      _ = try ChatRepository.open(user: 1, in: adaPhone.folder).send(to: 2, content: "queued on the phone")
      let export = folder + "/phone.ndjson.zst"
      #expect(try tool("chatdb", ["export", "--db", adaPhone.db, "--output", export]).status == 0)
      let adaDesktop = try Client(user: 1, device: "desktop", relay: relay, folder: folder)
      let imported = try tool("chatdb", ["import", "--db", adaDesktop.db, "--user", "1", "--other-device", export])
      #expect(imported.status == 0, "\(imported.stderr)")
      #expect(imported.stdout.contains("1 outbox requests left to the other device"), "\(imported.stdout)")
      #expect(try adaDesktop.count("SELECT count(*) FROM Messages WHERE request_id IS NOT NULL") == 0)
      try adaDesktop.start()
      defer { adaDesktop.halt() }
      #expect(await waitUntil(60) { adaDesktop.log.contains("sync: ") })
      #expect(adaDesktop.halt(SIGTERM) == 0)
      #expect(try adaDesktop.allMessages().map { "\($0.id) \($0.from) \($0.content)" } == reference, "nothing doubled")
      #expect(try adaDesktop.count("SELECT count(*) FROM MessageRequests") == 0, "the phone's request is the phone's")
      let check = try tool("chatdb", ["check", "--full", "--db", adaDesktop.db])
      #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
      for device in devices + [bobTablet] {
        let check = try tool("chatdb", ["check", "--full", "--db", device.db])
        #expect(check.status == 0, "chatdb check --full \(device.db): \(check.stdout) \(check.stderr)")
      }
    }
  }

  /// With `--retention-days 0` the relay keeps only what some device has not acknowledged:
  /// sampled while messages flow, no row is left that every device of both parties has;
  /// at the end only the idempotency records are.
  @Test func withRetentionZeroTheRelayKeepsOnlyWhatSomeDeviceHasNotAcknowledged() async throws {
    try await withDataFolder { folder in
      let relay = try RelayProcess(folder: folder, faults: ["--retention-days", "0"])
      defer { relay.stop() }
      let ada = try Client(user: 1, device: "phone", token: try relay.addUser(1, "Ada"), relay: relay, folder: folder)
      let adaLaptop = try Client(user: 1, device: "laptop", relay: relay, folder: folder)
      let bob = try Client(user: 2, device: "phone", token: try relay.addUser(2, "Bob"), relay: relay, folder: folder)
      let bobLaptop = try Client(user: 2, device: "laptop", relay: relay, folder: folder)
      let devices = [ada, adaLaptop, bob, bobLaptop]
      defer { devices.forEach { $0.halt() } }
      #expect(try ada.cli(["send", "--to", "2", "a0"]).status == 0)
      #expect(try bob.cli(["send", "--to", "1", "b0"]).status == 0)
      for device in devices { try device.start() }
      // Every device of both parties acknowledged it, and it is still there: a leak.
      let acknowledgedByAll = """
        SELECT count(*) FROM RelayMessages m
        WHERE m.id <= (SELECT min(synced_message) FROM RelayDevices WHERE user_id = m.to_user_id)
          AND m.id <= (SELECT min(synced_message) FROM RelayDevices WHERE user_id = m.from_user_id)
        """
      let relayDB = { try Database(path: relay.db, mode: .readOnly) }
      for round in 1...10 {
        for (device, to) in [(ada, Int64(2)), (bob, Int64(1))] {
          let outbox = try ChatRepository.open(user: device.id, in: device.folder)
          for i in 0..<20 { _ = try outbox.send(to: to, content: "\(device.id)-\(round)-\(i)") }
          _ = Nudge.send("outbox", to: device.db)
        }
        try await Task.sleep(for: .milliseconds(150))
        #expect(try relayDB().int64(acknowledgedByAll) == 0)
      }
      let total: Int64 = 2 + 10 * 2 * 20
      #expect(
        try await waitUntil(60) { try devices.allSatisfy { try $0.count("SELECT count(*) FROM Messages") == total } })
      let drained = try await waitUntil(60) { try relayDB().int64("SELECT count(*) FROM RelayMessages") == 0 }
      let left = try relayDB().int64("SELECT count(*) FROM RelayMessages") ?? -1
      let list = try tool("chat-relay", ["device", "list", "--db", relay.db, "--user", "1"]).stdout
      #expect(drained, "\(left) messages left on the relay; \(list)")
      #expect(try relayDB().int64("SELECT count(*) FROM RelayRequests") == total, "the idempotency records stay")
      for device in devices { #expect(device.halt(SIGTERM) == 0) }
    }
  }
}
