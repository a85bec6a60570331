import ChatRelay
import ChatStore
import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

@Suite(.ownThreads) struct RelayServerTests {
  private static func session() -> URLSession {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.timeoutIntervalForRequest = 10
    configuration.timeoutIntervalForResource = 20
    return URLSession(configuration: configuration)
  }

  private static func fields(_ data: Data) -> [String: String] {
    var result: [String: String] = [:]
    for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
      let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
      result[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
    }
    return result
  }

  @Test func getReachesTheHandlerWithPathQueryAndHeaders() async throws {
    let running = try RunningServer()
    defer { running.stop() }
    var request = URLRequest(
      url: try #require(
        URL(string: running.base + "/v2/things?b=two%20words&a=x%26y%3Dz&plus=1%2B1&sp=a+b&empty&pct=100%25")))
    request.setValue("Bearer abc", forHTTPHeaderField: "Authorization")
    let (data, response) = try await Self.session().data(for: request)
    let http = try #require(response as? HTTPURLResponse)
    #expect(http.statusCode == 200)
    #expect(http.value(forHTTPHeaderField: "Content-Type") == "text/plain")
    let fields = Self.fields(data)
    #expect(fields["method"] == "GET")
    #expect(fields["path"] == "/v2/things")
    #expect(fields["query"] == "a=x&y=z&b=two words&empty=&pct=100%&plus=1+1&sp=a b")
    #expect(fields["auth"] == "Bearer abc")
    // The log names method, path and status, never the query or the token.
    let lines = running.log.filter { $0.hasPrefix("log http") }
    #expect(lines.contains { $0.contains("GET /v2/things 200") })
    #expect(!lines.contains { $0.contains("two") || $0.contains("abc") })
  }

  /// Sends `request` and blocks this thread until the answer, which URLSession hands
  /// to its own delegate queue.
  ///
  /// Tests that count connections wait this way rather than with `await`: in a full
  /// `swift test` on 2 cores the cooperative pool's two threads are taken for tens of
  /// seconds by synchronous tests waiting on subprocesses, so an awaited answer that
  /// arrived in 0.08 s was seen to resume the test 25 s later; by then lws had closed
  /// the idle keep-alive connection (its 5 s idle timeout), and the next request went
  /// out on a new one. A blocked thread needs no cooperative thread back to go on.
  private static func fetch(
    _ session: URLSession, _ request: URLRequest, seconds: Double = 30
  ) throws -> (data: Data, status: Int, elapsed: Double) {
    let answer = Locked<Result<(Data, URLResponse), any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    let start = Date()
    session.dataTask(with: request) { data, response, error in
      answer.withLock { value in
        if let data, let response {
          value = .success((data, response))
        } else {
          value = .failure(error ?? URLError(.badServerResponse))
        }
      }
      done.signal()
    }.resume()
    guard done.wait(timeout: .now() + seconds) == .success else { throw URLError(.timedOut) }
    let elapsed = Date().timeIntervalSince(start)
    let (data, response) = try answer.withLock { try $0!.get() }
    return (data, (response as? HTTPURLResponse)?.statusCode ?? 0, elapsed)
  }

  private static func post(_ base: String, _ body: [UInt8]) throws -> URLRequest {
    var request = URLRequest(url: try #require(URL(string: base + "/v2/messages")))
    request.httpMethod = "POST"
    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    request.httpBody = Data(body)
    return request
  }

  /// The connection ids of the logged requests (`http <id>: <method> <path> ...`).
  private static func connections(_ running: RunningServer) -> Set<Substring> {
    Set(
      running.log.filter { $0.hasPrefix("log http ") && $0.contains(": ") }
        .map { $0.split(separator: ":")[0] })
  }

  @Test func postBodiesArriveWholeAndKeepAliveReusesOneConnection() throws {
    let running = try RunningServer()
    defer { running.stop() }
    let session = Self.session()
    let body = [UInt8]((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
    for round in 0..<5 {
      let expected = round.isMultiple(of: 2) ? body : Array("{\"n\":\(round)}".utf8)
      let (data, status, _) = try Self.fetch(session, try Self.post(running.base, expected))
      #expect(status == 200)
      let fields = Self.fields(data)
      #expect(fields["method"] == "POST")
      #expect(fields["type"] == "application/json")
      #expect(fields["length"] == "\(expected.count)")
      #expect(fields["sum"] == "\(expected.reduce(0) { $0 &+ Int($1) })")
      let ping = URLRequest(url: try #require(URL(string: running.base + "/v2/ping")))
      #expect(try Self.fetch(session, ping).status == 200)
    }
    let connections = Self.connections(running)
    // Ten requests on one keep-alive connection. One more is tolerated: the server
    // rightly closes a connection idle for 5 s, which a starved test process can cause.
    #expect(connections.count <= 2, "requests used \(connections)")
  }

  /// Several clients at once send keep-alive POSTs of mixed sizes (up to the 1 MiB limit):
  /// every body arrives whole and no answer takes anywhere near a client timeout.
  @Test func concurrentKeepAlivePostsOfMixedSizesAreAllAnsweredPromptly() throws {
    let running = try RunningServer()
    defer { running.stop() }
    let session = Self.session()
    let sizes = [0, 5, 1_000, 16_385, 70_000, 300_000, RelayServer.maximumBodySize]
    let base = running.base
    let failures = Locked<[String]>([])
    DispatchQueue.concurrentPerform(iterations: 4) { worker in
      // The bodies first: making a 1 MiB body can take seconds under a sanitizer, and a
      // keep-alive connection idle that long is rightly closed by the server just as the
      // client reuses it ("Empty reply from server").
      let bodies = (0..<10).map { index in
        [UInt8]((0..<sizes[(index + worker) % sizes.count]).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ worker) })
      }
      let sums = bodies.map { $0.reduce(0) { $0 &+ Int($1) } }
      for index in 0..<10 {
        let size = sizes[(index + worker) % sizes.count]
        let body = bodies[index]
        do {
          let (data, status, elapsed) = try Self.fetch(session, try Self.post(base, body))
          let fields = Self.fields(data)
          // Generous: a healthy answer takes milliseconds; 10 s means a stalled request.
          if status != 200 || fields["length"] != "\(size)"
            || fields["sum"] != "\(sums[index])" || elapsed > 10
          {
            failures.withLock { $0.append("worker \(worker) #\(index) \(size) B: \(status) after \(elapsed) s") }
          }
        } catch {
          failures.withLock { $0.append("worker \(worker) #\(index) \(size) B: \(error)") }
        }
      }
    }
    #expect(failures.withLock { $0 } == [])
    // The relay logs a request after writing its answer, so the last line can land after
    // the client has read that answer: wait for the lines (bounded) rather than read once.
    let answered = { (log: [String]) in log.filter { $0.contains("POST /v2/messages 200") }.count }
    #expect(running.waitFor(10) { answered($0) >= 40 })
    #expect(answered(running.log) == 40)
  }

  @Test func extraHeadersAndStatusesGoOut() async throws {
    let running = try RunningServer()
    defer { running.stop() }
    let (data, response) = try await Self.session().data(from: try #require(URL(string: running.base + "/retry")))
    let http = try #require(response as? HTTPURLResponse)
    #expect(http.statusCode == 503)
    #expect(http.value(forHTTPHeaderField: "Retry-After") == "2")
    #expect(String(decoding: data, as: UTF8.self) == "later")
  }

  @Test func aBodyOverOneMebibyteGets413AndTheConnectionStaysUsable() async throws {
    let running = try RunningServer()
    defer { running.stop() }
    let session = Self.session()
    var request = URLRequest(url: try #require(URL(string: running.base + "/v2/messages")))
    request.httpMethod = "POST"
    request.httpBody = Data(count: RelayServer.maximumBodySize + 1)
    let (data, response) = try await session.data(for: request)
    #expect((response as? HTTPURLResponse)?.statusCode == 413)
    let json = try JSONSerialization.jsonObject(with: data) as? [String: [String: String]]
    #expect(json?["error"]?["code"] == "too_large")
    request.httpBody = Data(count: RelayServer.maximumBodySize)
    let (_, accepted) = try await session.data(for: request)
    #expect((accepted as? HTTPURLResponse)?.statusCode == 200)
  }

  @Test func webSocketOpensEchoesReassemblesAndClosesOnce() throws {
    try #require(PythonPeer.hasWebSockets, "install python3-websockets (scripts/test does)")
    let running = try RunningServer()
    defer { running.stop() }
    let result = try PythonPeer.run(
      PythonPeer.client, arguments: ["ws://127.0.0.1:\(running.port)/v2/socket/updates", "Bearer good"])
    #expect(
      result.lines == [
        "got hello 42", "got echo: ping-1", "got echo: fragmented message", "got bye", "closed 1000",
      ])
    #expect(running.waitFor { $0.contains { $0.hasPrefix("closed ") } })
    let events = running.log.filter { !$0.hasPrefix("log ") }
    #expect(events.count == 5, "\(events)")
    #expect(events.first?.hasPrefix("opened ") == true)
    #expect(events.filter { $0.hasPrefix("closed ") }.count == 1)
    #expect(events.contains { $0.hasSuffix(" 42 fragmented message") })
  }

  @Test func aClientClosingIsReportedOnce() throws {
    try #require(PythonPeer.hasWebSockets, "install python3-websockets (scripts/test does)")
    let running = try RunningServer()
    defer { running.stop() }
    let script = """
      import asyncio, sys, websockets
      async def main():
          async with websockets.connect(sys.argv[1], extra_headers={"Authorization": "Bearer good"},
                                        open_timeout=5, close_timeout=2) as ws:
              print("got", await asyncio.wait_for(ws.recv(), 5))
      asyncio.run(asyncio.wait_for(main(), 15))
      """
    let result = try PythonPeer.run(script, arguments: ["ws://127.0.0.1:\(running.port)/v2/socket/updates"])
    #expect(result.lines == ["got hello 42"])
    #expect(running.waitFor { $0.contains { $0.hasPrefix("closed ") } })
    #expect(running.log.filter { $0.hasPrefix("closed ") }.count == 1)
  }

  @Test func aRefusedUpgradeGets401WithAJSONError() throws {
    try #require(PythonPeer.hasWebSockets, "install python3-websockets (scripts/test does)")
    let running = try RunningServer()
    defer { running.stop() }
    let refused = try PythonPeer.run(
      PythonPeer.client, arguments: ["ws://127.0.0.1:\(running.port)/v2/socket/updates", "Bearer bad"])
    #expect(refused.lines == ["status 401"])
    let raw = try PythonPeer.run(
      PythonPeer.rawUpgrade, arguments: ["\(running.port)", "/v2/socket/updates", "Bearer bad"])
    #expect(raw.lines.first?.hasPrefix("HTTP/1.1 401") == true)
    let body = try #require(raw.lines.dropFirst().first)
    let json = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: [String: String]]
    #expect(json?["error"]?["code"] == "unauthorized")
    let elsewhere = try PythonPeer.run(
      PythonPeer.rawUpgrade, arguments: ["\(running.port)", "/v2/other", "Bearer good"])
    #expect(elsewhere.lines.first?.hasPrefix("HTTP/1.1 404") == true)
    #expect(!running.log.contains { $0.hasPrefix("opened ") })
    #expect(running.log.contains { $0.contains("GET /v2/socket/updates 401") })
  }

  @Test func stopClosesOpenSocketsAndReportsThem() throws {
    try #require(PythonPeer.hasWebSockets, "install python3-websockets (scripts/test does)")
    let running = try RunningServer()
    let script = """
      import asyncio, sys, websockets
      async def main():
          async with websockets.connect(sys.argv[1], extra_headers={"Authorization": "Bearer good"},
                                        open_timeout=5, close_timeout=2) as ws:
              print("got", await asyncio.wait_for(ws.recv(), 5), flush=True)
              try:
                  await asyncio.wait_for(ws.recv(), 10)
              except websockets.exceptions.ConnectionClosed:
                  print("closed")
      asyncio.run(asyncio.wait_for(main(), 15))
      """
    let done = DispatchSemaphore(value: 0)
    let output = EventLog()
    let url = "ws://127.0.0.1:\(running.port)/v2/socket/updates"
    DispatchQueue.global().async {
      let result = try? PythonPeer.run(script, arguments: [url])
      for line in result?.lines ?? [] { output.append(line) }
      done.signal()
    }
    #expect(running.waitFor(10) { $0.contains { $0.hasPrefix("opened ") } })
    #expect(running.stop(within: 10))
    #expect(done.wait(timeout: .now() + 20) == .success)
    #expect(output.lines == ["got hello 42", "closed"])
    #expect(running.log.filter { $0.hasPrefix("closed ") }.count == 1)
  }

  @Test func stopMakesRunReturn() throws {
    let running = try RunningServer()
    #expect(running.port > 0)
    #expect(running.stop(within: 10))
  }
}
