import Foundation
import TestSupport
import Testing

/// Issue 28's "others' text on a terminal": a message's control characters and bidi
/// overrides reach a terminal escaped, and stay exact when piped and in --json.
@Suite(.ownThreads) struct TerminalTextTests {
  // No NUL: a command-line argument cannot carry one.
  static let hostile = "ok \u{1B}[2J\u{1B}]0;pwned\u{7} \u{202E}gnp.exe\nSECOND LINE\u{7F}\u{85}"

  @Test func hostileTextIsEscapedOnATerminalAndExactElsewhere() async throws {
    try await withDataFolder { folder in
      // Queued offline (nothing listens on port 9): the outbox holds the text.
      let sent = try tool(
        "chat-sync",
        ["send", "--data-dir", folder, "--user", "1", "--to", "2", "--server", "http://127.0.0.1:9", Self.hostile],
        environment: ["CHAT_SYNC_TOKEN": "x"])
      #expect(sent.status == 0, "\(sent.stderr)")
      let commands = [
        (products.path + "/chat-sync", ["history", "--data-dir", folder, "--user", "1", "--with", "2"]),
        (products.path + "/chat-sync", ["search", "--data-dir", folder, "--user", "1", "pwned"]),
        (products.path + "/chatdb", ["search", "--data-dir", folder, "--user", "1", "pwned"]),
      ]
      for (program, arguments) in commands {
        // On a terminal: util-linux `script` runs the command on a pseudo-terminal.
        let line = ([program] + arguments).map { "'" + $0 + "'" }.joined(separator: " ")
        let screen = try tool("/usr/bin/script", ["-q", "-e", "-c", line, "/dev/null"])
        #expect(screen.status == 0, "\(arguments): \(screen.stdout)")
        let bytes = Array(screen.stdout.utf8)
        #expect(!bytes.contains(0x1B) && !bytes.contains(0x07) && !bytes.contains(0), "\(arguments): \(screen.stdout)")
        #expect(!screen.stdout.unicodeScalars.contains("\u{202E}"), "\(arguments)")
        #expect(screen.stdout.contains(#"\u{1B}[2J"#) && screen.stdout.contains(#"\u{202E}gnp.exe\nSECOND"#))
        // Piped, the text is exact (the search's snippet marks the match).
        let piped = try tool(String(program.split(separator: "/").last!), arguments)
        #expect(piped.status == 0 && piped.stdout.contains("\u{1B}[2J"), "\(arguments): \(piped.stderr)")
      }
      let json = try tool("chat-sync", ["history", "--data-dir", folder, "--user", "1", "--with", "2", "--json"])
      let envelope = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
      let result = (envelope?["files"] as? [[String: Any]])?.first?["result"] as? [String: Any]
      let items = result?["items"] as? [[String: Any]]
      #expect(items?.first?["content"] as? String == Self.hostile, "\(json.stdout)")
    }
  }
}
