import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatSync

/// Issue 30: media between two users with two devices each, through the relay's faults,
/// a relay kill -9 and a sender's kill -9 in the middle of an upload. Every attachment
/// arrives on every device with its thumbnail; the photo is downloaded at once (an image
/// under the auto-download size), the large file only on demand (`fetch`), and each
/// file matches its hash; nothing is left partial or stray, and `chatdb check` is clean.
@Suite(.serialized, .ownThreads) struct MediaSystemTests {
  static func sha256(_ path: String) throws -> String {
    SHA256.hex(digest: try #require(SHA256.digest(ofFile: path, length: FileSystem.size(atPath: path) ?? 0)))
  }

  /// `count` bytes of a deterministic stream (no encoder squeezes it).
  static func noise(_ count: Int, seed: UInt32) -> Data {
    var state = seed
    var bytes = [UInt8](repeating: 0, count: count)
    for i in 0..<count {
      state = state &* 1_103_515_245 &+ 12_345
      bytes[i] = UInt8(truncatingIfNeeded: state >> 16)
    }
    return Data(bytes)
  }

  /// A `width` x `height` binary PPM (P6) of noisy colours.
  static func ppm(width: Int, height: Int) -> Data {
    Data("P6\n\(width) \(height)\n255\n".utf8) + noise(width * height * 3, seed: 7)
  }

  @Test func attachmentsReachEveryDeviceWithThumbnailsAndFetchedMediaMatchItsHash() async throws {
    try await withDataFolder { folder in
      let relay = try RelayProcess(
        folder: folder, faults: ["--faults", "drop-response=0.1,close-socket=0.005", "--faults-seed", "30"])
      defer { relay.stop() }
      let adaToken = try relay.addUser(1, "Ada")
      let bobToken = try relay.addUser(2, "Bob")
      let adaPhone = try Client(user: 1, device: "phone", token: adaToken, relay: relay, folder: folder)
      let adaLaptop = try Client(user: 1, device: "laptop", relay: relay, folder: folder)
      let bobPhone = try Client(user: 2, device: "phone", token: bobToken, relay: relay, folder: folder)
      let bobLaptop = try Client(user: 2, device: "laptop", relay: relay, folder: folder)
      let devices = [adaPhone, adaLaptop, bobPhone, bobLaptop]
      defer { devices.forEach { $0.halt() } }

      // A photo (a PPM libvips reads), a 12 MB file and a voice note.
      let photo = folder + "/beach.ppm"
      try Self.ppm(width: 1_200, height: 800).write(to: URL(fileURLWithPath: photo))
      let archive = folder + "/archive.bin"
      try Self.noise(12_000_000, seed: 30).write(to: URL(fileURLWithPath: archive))
      let voice = folder + "/voice.ogg"
      try Self.noise(300_000, seed: 31).write(to: URL(fileURLWithPath: voice))
      let hashes = try [photo, archive, voice].map(Self.sha256)

      // Queued offline: the files go into the media folder, the photo's thumbnail is made.
      let sent = try adaPhone.cli(["send", "--to", "2", "--attach", photo, "--json", "the view"])
      #expect(sent.status == 0, "\(sent.stderr)")
      #expect(sent.stdout.contains("\"thumbnailBytes\"") && sent.stdout.contains(hashes[0]), "\(sent.stdout)")
      #expect(try adaPhone.cli(["send", "--to", "2", "--attach", archive, "the archive"]).status == 0)
      #expect(try bobPhone.cli(["send", "--to", "1", "--attach", voice]).status == 0)
      #expect(FileSystem.permissions(atPath: adaPhone.folder + "/chats-1.media") == 0o700)
      #expect(FileSystem.permissions(atPath: adaPhone.folder + "/chats-1.media/" + hashes[1]) == 0o600)

      // Ada's phone uploads in 64 KiB requests, so its kill lands mid-upload.
      try adaPhone.start(["--media-chunk-size", "64KiB"])
      for device in devices.dropFirst() { try device.start() }
      #expect(
        await waitUntil(60) { adaPhone.log.contains("upload of \(hashes[1].prefix(12)): ") },
        "\(adaPhone.log.suffix(2_000))")
      adaPhone.halt()
      try relay.kill9AndRestart()
      try adaPhone.start(["--media-chunk-size", "64KiB"])

      // Every device has the three messages, each with its attachment and (the photo) thumbnail.
      let arrived = try await waitUntil(120) {
        try devices.allSatisfy {
          try $0.count("SELECT count(*) FROM Attachments") == 3 && $0.count("SELECT count(*) FROM MessageRequests") == 0
        }
      }
      let counts = try devices.map { "\($0.id)/\($0.name): \(try $0.count("SELECT count(*) FROM Attachments"))" }
      // Every run's log of Ada's phone: the kill landed mid-upload, so the next run resumed
      // it (unless the last chunks got through between the log line and the kill).
      let phoneLogs = (1...2).map {
        (try? String(contentsOfFile: adaPhone.folder + "/run-\($0).log", encoding: .utf8)) ?? ""
      }
      #expect(arrived, "attachments per device: \(counts); Ada's phone: \(phoneLogs[1].suffix(3_000))")
      #expect(
        phoneLogs[1].contains("resuming the upload of")
          || phoneLogs[0].components(separatedBy: "sent request").count - 1 == 2,
        "run 1: \(phoneLogs[0].suffix(1_500))\nrun 2: \(phoneLogs[1].suffix(1_500))")
      for device in devices {
        let thumbnail = try device.count(
          "SELECT length(a.thumbnail) FROM Attachments a JOIN Media m ON m.id = a.media_id WHERE m.sha256 = '\(hashes[0])'"
        )
        #expect(thumbnail > 0 && thumbnail <= Thumbnail.maximumBytes, "\(device.id)/\(device.name)")
        #expect(try device.count("SELECT count(*) FROM Media WHERE relay_id IS NULL") == 0)
      }

      // Bob's devices download the photo at once (an image under 5 MiB), not the archive.
      let photoHere = try await waitUntil(60) {
        try [bobPhone, bobLaptop, adaLaptop].allSatisfy {
          try $0.count("SELECT count(*) FROM Media WHERE sha256 = '\(hashes[0])' AND state = 'local'") == 1
        }
      }
      #expect(photoHere, "Bob's laptop: \(bobLaptop.log.suffix(2_000))")
      #expect(try bobLaptop.count("SELECT count(*) FROM Media WHERE sha256 = '\(hashes[1])' AND state = 'remote'") == 1)
      #expect(try Self.sha256(bobLaptop.folder + "/chats-2.media/" + hashes[0]) == hashes[0])

      // On demand: the archive, on Bob's laptop; its bytes match.
      let message = try bobLaptop.count(
        "SELECT a.message_id FROM Attachments a JOIN Media m ON m.id = a.media_id WHERE m.sha256 = '\(hashes[1])'")
      let fetched = try bobLaptop.cli(["fetch", "--message", String(message), "--json"])
      #expect(fetched.status == 0, "\(fetched.stderr)")
      #expect(try Self.sha256(bobLaptop.folder + "/chats-2.media/" + hashes[1]) == hashes[1])
      #expect(try bobLaptop.count("SELECT count(*) FROM Media WHERE sha256 = '\(hashes[1])' AND state = 'local'") == 1)
      // Ada's laptop gets Bob's voice note on demand too (audio is not downloaded at once).
      let voiceMessage = try adaLaptop.count(
        "SELECT a.message_id FROM Attachments a JOIN Media m ON m.id = a.media_id WHERE m.sha256 = '\(hashes[2])'")
      #expect(try adaLaptop.cli(["fetch", "--message", String(voiceMessage)]).status == 0)
      #expect(try Self.sha256(adaLaptop.folder + "/chats-1.media/" + hashes[2]) == hashes[2])

      for device in devices { #expect(device.halt(SIGTERM) == 0) }

      // A storage policy on Bob's laptop: `run` keeps the media files under 1 MiB, least
      // recently accessed first (the photo went first), and `status` shows what it did.
      let set = try tool("chatdb", ["policy", "set", "--db", bobLaptop.db, "--media-cache-max", "1MiB"])
      #expect(set.status == 0, "\(set.stderr)")
      let once = try bobLaptop.cli(["run", "--once"])
      #expect(
        once.status == 0 && once.stderr.contains("policy (run --once): removed 2 media file(s)"), "\(once.stderr)")
      #expect(try bobLaptop.count("SELECT count(*) FROM Media WHERE state = 'local'") == 0)
      #expect(try bobLaptop.count("SELECT count(*) FROM Attachments WHERE thumbnail IS NOT NULL") == 1)
      let status = try bobLaptop.cli(["status"])
      #expect(status.stdout.contains("policy:    media cache 1.0 MiB; last run "), "\(status.stdout)")
      // Evicted media downloads again on demand.
      #expect(try bobLaptop.cli(["fetch", "--message", String(message)]).status == 0)
      #expect(try Self.sha256(bobLaptop.folder + "/chats-2.media/" + hashes[1]) == hashes[1])

      // Nothing partial or stray is left, and every file checks clean (with the hashes).
      for device in devices {
        let media = device.folder + "/chats-\(device.id).media"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: media)) ?? []
        #expect(names.allSatisfy { MediaFolder.isMediaName($0) }, "\(device.id)/\(device.name): \(names)")
        let check = try tool("chatdb", ["check", "--full", "--db", device.db])
        #expect(check.status == 0, "\(device.id)/\(device.name): \(check.stdout) \(check.stderr)")
      }
    }
  }
}
