// Shared by every fuzz target (built by scripts/torture.d/fuzz.sh with
// `swiftc -sanitize=fuzzer,address`; each target is this file plus one other).

#if canImport(Glibc)
  import Glibc
#endif

/// Stops the run when an invariant does not hold: libFuzzer reports it as a crash and
/// keeps the input that broke it.
func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, line: UInt = #line) {
  if !condition() { fatalError("fuzz invariant broken: \(message())", line: line) }
}

/// The fuzzer's input as bytes.
func input(_ data: UnsafePointer<UInt8>, _ size: Int) -> UnsafeBufferPointer<UInt8> {
  UnsafeBufferPointer(start: size == 0 ? nil : data, count: size)
}

/// The input cut at every `separator` byte (empty pieces kept), as a shell hands a
/// program its arguments: bytes that are not UTF-8 are repaired, as `CommandLine` does.
func pieces(_ bytes: UnsafeBufferPointer<UInt8>, separator: UInt8) -> [String] {
  bytes.split(separator: separator, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
}

/// One file in the temporary folder, rewritten for every input (the readers under test
/// take a path or a descriptor, not bytes). Removed when the process ends normally.
final class ScratchFile {
  let path: String

  init(_ name: String) {
    let folder = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
    path = "\(folder)/chatdb-fuzz-\(getpid())-\(name)"
  }

  /// Replaces the file's bytes with `bytes`.
  func write(_ bytes: UnsafeBufferPointer<UInt8>) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    require(fd >= 0, "cannot create \(path): errno \(errno)")
    var done = 0
    while done < bytes.count {
      let n = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
      require(n > 0, "cannot write \(path): errno \(errno)")
      done += n
    }
    close(fd)
  }

  func remove() { unlink(path) }
}
