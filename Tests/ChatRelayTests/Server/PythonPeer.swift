import Foundation

/// Runs `/usr/bin/python3` (Debian's, where python3-websockets installs) on an
/// inline script, killing it after `seconds`. Returns stdout lines and the exit status.
enum PythonPeer {
  static let interpreter = "/usr/bin/python3"

  /// True when Debian's python has the `websockets` package (scripts/test installs it).
  static var hasWebSockets: Bool {
    guard FileManager.default.isExecutableFile(atPath: interpreter) else { return false }
    return (try? run("import websockets\nprint('ok')", arguments: []))?.lines == ["ok"]
  }

  static func run(_ script: String, arguments: [String], seconds: Double = 20) throws -> (
    lines: [String], status: Int32
  ) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: interpreter)
    process.arguments = ["-c", script] + arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let killer = DispatchWorkItem { if process.isRunning { process.terminate() } }
    DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: killer)
    // Read before waiting, or a full pipe would block the script.
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    killer.cancel()
    let text = String(decoding: data, as: UTF8.self)
    return (text.split(separator: "\n").map(String.init), process.terminationStatus)
  }

  /// Connects with `token`, prints what it receives: `hello`, the echo of `ping-1`,
  /// the echo of a fragmented message, then `bye` and the close code after `close me`.
  /// A refused upgrade prints `status <code>`.
  static let client = """
    import asyncio, sys, websockets
    async def main(uri, token):
        try:
            async with websockets.connect(uri, extra_headers={"Authorization": token},
                                          open_timeout=5, close_timeout=2) as ws:
                print("got", await asyncio.wait_for(ws.recv(), 5))
                await ws.send("ping-1")
                print("got", await asyncio.wait_for(ws.recv(), 5))
                await ws.send(["frag", "mented ", "message"])
                print("got", await asyncio.wait_for(ws.recv(), 5))
                await ws.send("close me")
                print("got", await asyncio.wait_for(ws.recv(), 5))
                try:
                    await asyncio.wait_for(ws.recv(), 5)
                except websockets.exceptions.ConnectionClosed as closed:
                    print("closed", closed.rcvd.code if closed.rcvd else "none")
        except websockets.exceptions.InvalidStatusCode as refused:
            print("status", refused.status_code)
    asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2]), 15))
    """

  /// Sends a raw upgrade request and prints the response's status line and body.
  static let rawUpgrade = """
    import socket, sys
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    s.sendall(("GET " + sys.argv[2] + " HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nUpgrade: websocket\\r\\n"
               "Connection: Upgrade\\r\\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\n"
               "Sec-WebSocket-Version: 13\\r\\nAuthorization: " + sys.argv[3] + "\\r\\n\\r\\n").encode())
    data = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\\r\\n\\r\\n")
    print(head.split(b"\\r\\n")[0].decode())
    print(body.decode())
    """
}
