import ChatStore
import Dispatch
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Runs async work from a synchronous command and waits for it.
func blocking<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
  let box = ResultBox<T>()
  let done = DispatchSemaphore(value: 0)
  Task {
    do { box.result = .success(try await work()) } catch { box.result = .failure(error) }
    done.signal()
  }
  done.wait()
  return try box.result!.get()
}

private final class ResultBox<T>: @unchecked Sendable {
  // @unchecked: written once before the semaphore is signalled, read after it.
  var result: Result<T, any Error>?
}

/// Wall-clock seconds since 1970 (comparable with the script's `date +%s.%N` and with
/// the ISO 8601 times in the files and logs).
func wallClock() -> Double { Date().timeIntervalSince1970 }

/// CPU seconds (user + system) this process has used, all threads.
func cpuSeconds() -> Double {
  var usage = rusage()
  getrusage(RUSAGE_SELF.rawValue, &usage)
  return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
    + Double(usage.ru_stime.tv_usec) / 1e6
}

/// Writes `value` to `path` (replacing it) as one line of JSON.
func writeJSON(_ value: JSONValue, to path: String) throws {
  let text = value.render(pretty: false) + "\n"
  guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else {
    throw StoreError(.io, "\(path): cannot write", path: path)
  }
}
