import Foundation
import TestSupport
import Testing

/// Issue 28's TLS: `chat-relay serve --tls-cert --tls-key` serves HTTPS and WSS on one
/// port, `chat-sync` verifies the relay's certificate (against `--ca-file` here: a
/// throwaway CA made with `openssl` at test time, no key committed) and refuses one that
/// does not verify with its reason and exit 77; outside clients (curl, Python's
/// `websockets` and `urllib`) talk to the same relay.
@Suite(.serialized, .ownThreads) struct TLSTests {
  @Test func chatSyncSendsAndReceivesThroughTheRelayOverTLS() async throws {
    try await withDataFolder { folder in
      let certificates = try TestCertificates(folder: folder + "/tls")
      let relay = try RelayProcess(folder: folder, tls: certificates.server)
      defer { relay.stop() }
      let ada = try Self.tokenFile(relay.addUser(1, "Ada"), in: folder, name: "ada")
      let bob = try Self.tokenFile(relay.addUser(2, "Bob"), in: folder, name: "bob")
      func sync(_ arguments: [String], token: String, dataDir: String) throws -> Output {
        try tool(
          "chat-sync",
          arguments + [
            "--server", relay.url, "--ca-file", certificates.ca, "--token-file", token, "--data-dir", dataDir,
          ])
      }
      let sent = try sync(["send", "--user", "1", "--to", "2", "sealed 🔒"], token: ada, dataDir: folder + "/ada")
      #expect(sent.status == 0, "\(sent.stderr)")
      let adaRun = try sync(["run", "--once", "--user", "1"], token: ada, dataDir: folder + "/ada")
      #expect(adaRun.status == 0 && adaRun.stdout.contains("sent 1 "), "\(adaRun.stdout) \(adaRun.stderr)")
      // The socket (wss://) came up too: the run connected it before syncing.
      #expect(adaRun.stderr.contains("socket: connected"), "\(adaRun.stderr)")
      let bobRun = try sync(["run", "--once", "--user", "2"], token: bob, dataDir: folder + "/bob")
      #expect(bobRun.status == 0 && bobRun.stdout.contains("received 1,"), "\(bobRun.stdout) \(bobRun.stderr)")
      let history = try tool("chat-sync", ["history", "--data-dir", folder + "/bob", "--user", "2", "--with", "1"])
      #expect(history.stdout.contains("sealed 🔒"), "\(history.stdout) \(history.stderr)")
    }
  }

  @Test func curlAndPythonTalkToTheRelayOverTLSAndPlaintextIsRefused() async throws {
    try await withDataFolder { folder in
      let certificates = try TestCertificates(folder: folder + "/tls")
      let relay = try RelayProcess(folder: folder, tls: certificates.server)
      defer { relay.stop() }
      let ada = try relay.addUser(1, "Ada")
      let bob = try relay.addUser(2, "Bob")
      let health = try tool("/usr/bin/curl", ["-sS", "--cacert", certificates.ca, relay.url + "/v2/health"])
      #expect(health.status == 0 && health.stdout.contains("\"version\":2"), "\(health.stdout) \(health.stderr)")
      // curl's own check: without the CA it refuses the certificate (60).
      let unverified = try tool("/usr/bin/curl", ["-sS", relay.url + "/v2/health"])
      #expect(unverified.status == 60, "\(unverified.stderr)")
      // Plain HTTP to the TLS port is refused in plain text, with the protocol's error body.
      let plain = try tool(
        "/usr/bin/curl", ["-sS", "-m", "10", "-w", "%{http_code}", "http://127.0.0.1:\(relay.port)/v2/health"])
      #expect(
        plain.status == 0 && plain.stdout.hasPrefix(#"{"error":{"code":"bad_request""#)
          && plain.stdout.contains("https://") && plain.stdout.hasSuffix("400"), "\(plain.status) \(plain.stdout)")
      // Garbage sent inside TLS gets the relay's 400 inside TLS (openssl s_client).
      let inside = try tool(
        "/bin/sh",
        [
          "-c",
          #"printf 'garbage\r\n\r\n' | /usr/bin/openssl s_client -quiet -connect "127.0.0.1:$0" 2>/dev/null"#,
          String(relay.port),
        ], seconds: 20)
      #expect(
        inside.stdout.hasPrefix("HTTP/1.1 400 Bad Request") && inside.stdout.contains("not an HTTP/1.1 request"),
        "\(inside.stdout)")
      // A TLS client still gets TLS after that.
      let again = try tool("/usr/bin/curl", ["-sS", "-m", "10", "--cacert", certificates.ca, relay.url + "/v2/health"])
      #expect(again.status == 0 && again.stdout.contains(#""ok":true"#), "\(again.status) \(again.stdout)")
      // Bob's socket over wss:// with Python's websockets gets what Ada posts over https://.
      let script = """
        import asyncio, json, ssl, sys, urllib.request, websockets
        url, ca, ada, bob = sys.argv[1:5]
        context = ssl.create_default_context(cafile=ca)
        async def main():
            socket_url = url.replace("https://", "wss://") + "/v2/socket/updates"
            async with websockets.connect(socket_url, ssl=context,
                                          extra_headers={"Authorization": "Bearer " + bob}) as ws:
                body = json.dumps({"requestId": 7, "toUserId": 2, "content": "over tls"}).encode()
                request = urllib.request.Request(url + "/v2/messages", data=body, method="POST", headers={
                    "Authorization": "Bearer " + ada, "Content-Type": "application/json"})
                print("POST", urllib.request.urlopen(request, context=context).status)
                while True:
                    event = json.loads(await asyncio.wait_for(ws.recv(), 20))
                    if event["type"] == "new_message":
                        print("EVENT", event["payload"]["content"])
                        return
        asyncio.run(main())
        """
      let python = try tool("/usr/bin/python3", ["-c", script, relay.url, certificates.ca, ada, bob])
      #expect(python.status == 0, "\(python.stderr)")
      #expect(python.stdout.contains("POST 201") && python.stdout.contains("EVENT over tls"), "\(python.stdout)")
    }
  }

  /// `serve --push-webhook https://… --push-webhook-ca-file`: the notice reaches a receiver
  /// served over TLS (Python's `http.server` with the test CA's certificate), checked
  /// against that CA; a CA file without an https:// webhook is a usage error.
  @Test func anHTTPSWebhookGetsTheNoticeOverTLS() async throws {
    try await withDataFolder { folder in
      let certificates = try TestCertificates(folder: folder + "/tls")
      let script = """
        import http.server, json, re, ssl, subprocess, sys, threading, time, urllib.request
        relay, folder, ca, cert, key = sys.argv[1:6]
        got = []
        class Receiver(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                got.append((self.path, self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(204); self.end_headers()
            def log_message(self, *args): pass
        server = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        db = folder + "/relay.db"
        ada = subprocess.run([relay, "user", "add", "--db", db, "--id", "1", "--name", "Ada"], capture_output=True, text=True).stdout.split()[-1]
        subprocess.run([relay, "user", "add", "--db", db, "--id", "2", "--name", "Bob"], capture_output=True)
        hook = "https://localhost:%d/push" % server.server_address[1]
        serve = subprocess.Popen([relay, "serve", "--db", db, "--port", "0", "--push-webhook", hook,
                                  "--push-webhook-ca-file", ca], stderr=subprocess.PIPE, text=True)
        port = int(re.search(r"127.0.0.1:([0-9]+)", serve.stderr.readline()).group(1))
        body = json.dumps({"requestId": 1, "toUserId": 2, "content": "secret"}).encode()
        request = urllib.request.Request("http://127.0.0.1:%d/v2/messages" % port, data=body, method="POST",
                                         headers={"Authorization": "Bearer " + ada, "Content-Type": "application/json"})
        print("POST", urllib.request.urlopen(request).status)
        deadline = time.monotonic() + 20
        while not got and time.monotonic() < deadline: time.sleep(0.05)
        serve.terminate(); serve.wait()
        print("PUSH", got[0][0], json.loads(got[0][1]) if got else None)
        """
      let python = try tool(
        "/usr/bin/python3",
        [
          "-c", script, products.appendingPathComponent("chat-relay").path, folder, certificates.ca,
          certificates.server.certificate, certificates.server.key,
        ], seconds: 60)
      #expect(python.status == 0, "\(python.stderr)")
      #expect(
        python.stdout.contains("POST 201") && python.stdout.contains("PUSH /push {'fromUserId': 1,")
          && python.stdout.contains("'toUserId': 2")
          && !python.stdout.contains("secret"), "\(python.stdout)")
      let plain = try tool(
        "chat-relay",
        [
          "serve", "--db", folder + "/relay.db", "--port", "0", "--push-webhook", "http://127.0.0.1:9/push",
          "--push-webhook-ca-file", certificates.ca,
        ])
      #expect(plain.status == 64 && plain.stderr.contains("https://"), "\(plain.stderr)")
    }
  }

  /// A certificate that does not verify: its reason as OpenSSL gives it.
  enum Refusal: String, CaseIterable, CustomTestStringConvertible {
    case unknownAuthority = "unable to get local issuer certificate"
    case wrongHost = "hostname mismatch"
    case expired = "certificate has expired"
    var testDescription: String { rawValue }
  }

  @Test(arguments: Refusal.allCases)
  func aCertificateThatDoesNotVerifyIsRefusedWithItsReasonAnd77(_ refusal: Refusal) async throws {
    try await withDataFolder { folder in
      let certificates = try TestCertificates(folder: folder + "/tls")
      let served =
        switch refusal {
        case .unknownAuthority: certificates.server
        case .wrongHost: certificates.otherHost
        case .expired: certificates.expired
        }
      let relay = try RelayProcess(folder: folder, tls: served)
      defer { relay.stop() }
      let ada = try Self.tokenFile(relay.addUser(1, "Ada"), in: folder, name: "ada")
      // The unknown authority: the system's CAs (no --ca-file) do not know the test CA.
      let trust = refusal == .unknownAuthority ? [] : ["--ca-file", certificates.ca]
      for command in [
        ["run", "--once", "--user", "1"], ["run", "--user", "1"], ["send", "--user", "1", "--to", "2", "x"],
      ] {
        let out = try tool(
          "chat-sync",
          command + ["--server", relay.url, "--token-file", ada, "--data-dir", folder + "/ada"] + trust, seconds: 60)
        #expect(out.status == 77, "\(command): \(out.status) \(out.stderr)")
        let errors = out.stderr.split(separator: "\n").filter { $0.hasPrefix("Error: ") }
        #expect(
          errors.count == 1 && errors[0].contains("certificate was refused: \(refusal.rawValue)"), "\(out.stderr)")
      }
      // Nothing reached the relay: no request got through the handshake.
      let log = relay.server?.logText ?? ""
      #expect(!log.contains("GET /v2/me") && !log.contains("POST /v2/messages"), "\(log)")
    }
  }

  @Test func serveRefusesAReadableKeyHalfATLSSetupAndPlaintextBeyondLoopback() async throws {
    try await withDataFolder { folder in
      let certificates = try TestCertificates(folder: folder + "/tls")
      let db = folder + "/relay.db"
      _ = try tool("chat-relay", ["user", "add", "--db", db, "--id", "1", "--name", "Ada"])
      let (certificate, key) = certificates.server
      chmod(key, 0o644)
      let readable = try tool(
        "chat-relay", ["serve", "--db", db, "--port", "0", "--tls-cert", certificate, "--tls-key", key])
      #expect(readable.status == 77 && readable.stderr.contains("chmod 600"), "\(readable.stderr)")
      chmod(key, 0o600)
      let half = try tool("chat-relay", ["serve", "--db", db, "--port", "0", "--tls-cert", certificate])
      #expect(half.status == 64 && half.stderr.contains("go together"), "\(half.stderr)")
      // A certificate and a key that do not belong together, and a port already taken:
      // one line each, 65 and 69, and nothing of libwebsockets' own log.
      let mismatched = try tool(
        "chat-relay",
        ["serve", "--db", db, "--port", "0", "--tls-cert", certificates.otherHost.certificate, "--tls-key", key])
      #expect(mismatched.status == 65 && mismatched.stderr.contains("cannot serve TLS"), "\(mismatched.stderr)")
      #expect(mismatched.stderr.split(separator: "\n").count == 1, "\(mismatched.stderr)")
      let running = try RelayProcess(folder: folder)
      defer { running.stop() }
      let taken = try tool("chat-relay", ["serve", "--db", db, "--port", String(running.port)])
      #expect(taken.status == 69 && taken.stderr.contains("address already in use"), "\(taken.stderr)")
      #expect(taken.stderr.split(separator: "\n").count == 1, "\(taken.stderr)")
      let open = try tool("chat-relay", ["serve", "--db", db, "--port", "0", "--host", "0.0.0.0"])
      #expect(open.status == 64 && open.stderr.contains("--insecure-plaintext"), "\(open.stderr)")
      let client = try tool(
        "chat-sync",
        [
          "run", "--once", "--user", "1", "--server", "http://127.0.0.1:9", "--ca-file", certificates.ca, "--data-dir",
          folder + "/ada",
        ], environment: ["CHAT_SYNC_TOKEN": "x"])
      #expect(client.status == 64 && client.stderr.contains("https://"), "\(client.stderr)")
    }
  }

  /// `token` in a file of mode 0600, as `--token-file` wants it.
  static func tokenFile(_ token: String, in folder: String, name: String) throws -> String {
    let path = folder + "/\(name).token"
    try token.write(toFile: path, atomically: true, encoding: .utf8)
    chmod(path, 0o600)
    return path
  }
}

/// A throwaway CA and three server certificates it signed, made with `openssl` (TLS
/// tests only): one for `localhost` and 127.0.0.1, one for another host name, and an
/// expired one. Keys are mode 0600, as `serve --tls-key` wants them.
struct TestCertificates {
  let folder: String
  var ca: String { folder + "/ca.crt" }
  var server: (certificate: String, key: String) { (folder + "/server.crt", folder + "/server.key") }
  var otherHost: (certificate: String, key: String) { (folder + "/other.crt", folder + "/other.key") }
  var expired: (certificate: String, key: String) { (folder + "/expired.crt", folder + "/server.key") }

  init(folder: String) throws {
    self.folder = folder
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    // `openssl ca` signs the expired one: `x509 -req` cannot date a certificate in the past.
    let script = """
      set -e
      cd "$1"
      openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj "/CN=chatdb test CA"
      for name in server other; do
        openssl req -newkey rsa:2048 -nodes -keyout $name.key -out $name.csr -subj "/CN=$name"
      done
      printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > server.ext
      printf 'subjectAltName=DNS:other.example\\n' > other.ext
      for name in server other; do
        openssl x509 -req -in $name.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile $name.ext -out $name.crt
      done
      touch index.txt
      echo 1000 > serial
      printf '[ca]\\ndefault_ca = test\\n[test]\\ndatabase = index.txt\\nnew_certs_dir = .\\nserial = serial\\ndefault_md = sha256\\npolicy = any\\n[any]\\ncommonName = supplied\\n' > ca.cnf
      openssl ca -batch -config ca.cnf -cert ca.crt -keyfile ca.key -in server.csr -out expired.crt \\
        -startdate 20200101000000Z -enddate 20200102000000Z -extfile server.ext -notext
      chmod 600 *.key
      """
    let out = try tool("/bin/bash", ["-c", script, "certificates", folder])
    guard out.status == 0 else { throw TestFailure("openssl: \(out.stderr)") }
  }
}
