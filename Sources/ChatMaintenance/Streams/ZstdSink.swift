import CZstd
import ChatStore

/// A sink that writes one zstd frame with a content checksum, so `zstd -d` and
/// ``ByteSource`` both read it and detect damage.
///
/// With `workers` > 0 zstd compresses on its own threads while the caller keeps
/// producing. After ``finish()`` further writes start a new frame; concatenated frames
/// are a valid zstd stream.
/// See https://facebook.github.io/zstd/zstd_manual.html#Chapter8 (streaming compression).
public final class ZstdSink: ByteSink {
  private let fileDescriptor: Int32
  private let name: String
  private let context: OpaquePointer
  private let input: UnsafeMutableRawPointer
  private let inputCapacity: Int
  private var inputCount = 0
  private let output: UnsafeMutableRawPointer
  private let outputCapacity: Int
  /// Whether bytes were written since the last frame ended (an unused sink still owes one empty frame).
  private var frameOpen = true
  private var failure: StoreError?

  public private(set) var bytesWritten: Int64 = 0
  /// Bytes written to the descriptor, for the compression ratio in summaries.
  public private(set) var compressedBytes: Int64 = 0

  /// Compresses into `fileDescriptor`, which stays open; `name` is used in errors.
  ///
  /// `level` is a zstd level (1…19, default 3); `workers` sets `ZSTD_c_nbWorkers`
  /// (0 compresses on the calling thread).
  /// See https://facebook.github.io/zstd/zstd_manual.html#Chapter5 (advanced compression parameters).
  /// `hashLog` and `jobSize` override the level's `ZSTD_c_hashLog` and the workers'
  /// `ZSTD_c_jobSize` when given.
  public init(
    fileDescriptor: Int32, name: String, level: Int32 = 3, workers: Int32 = 1, hashLog: Int32? = nil,
    jobSize: Int32? = nil
  ) throws {
    guard let context = ZSTD_createCCtx() else {
      throw StoreError(
        .io, "\(name): cannot create a zstd compression context (out of memory)", path: Descriptor.path(of: name))
    }
    let settings: [(ZSTD_cParameter, Int32)] =
      [
        (ZSTD_c_compressionLevel, level),
        (ZSTD_c_checksumFlag, 1),
        (ZSTD_c_nbWorkers, workers),
      ] + (hashLog.map { [(ZSTD_c_hashLog, $0)] } ?? []) + (jobSize.map { [(ZSTD_c_jobSize, $0)] } ?? [])
    do {
      for (parameter, value) in settings {
        try Zstd.check(ZSTD_CCtx_setParameter(context, parameter, value)) { reason in
          StoreError(.io, "\(name): cannot set up zstd compression: \(reason)", path: Descriptor.path(of: name))
        }
      }
    } catch {
      ZSTD_freeCCtx(context)
      throw error
    }
    self.fileDescriptor = fileDescriptor
    self.name = name
    self.context = context
    self.inputCapacity = ZSTD_CStreamInSize()
    self.input = .allocate(byteCount: inputCapacity, alignment: 16)
    self.outputCapacity = ZSTD_CStreamOutSize()
    self.output = .allocate(byteCount: outputCapacity, alignment: 16)
  }

  deinit {
    ZSTD_freeCCtx(context)  // also joins the worker threads
    input.deallocate()
    output.deallocate()
  }

  public func write(_ bytes: UnsafeRawBufferPointer) throws {
    if let failure { throw failure }
    guard var source = bytes.baseAddress, !bytes.isEmpty else { return }
    frameOpen = true
    var remaining = bytes.count
    try failing {
      while remaining > 0 {
        let chunk = min(remaining, inputCapacity - inputCount)
        (input + inputCount).copyMemory(from: source, byteCount: chunk)
        inputCount += chunk
        source += chunk
        remaining -= chunk
        if inputCount == inputCapacity { try compress(ZSTD_e_continue) }
      }
    }
    bytesWritten += Int64(bytes.count)
  }

  public func finish() throws {
    if let failure { throw failure }
    guard frameOpen else { return }
    try failing { try compress(ZSTD_e_end) }
    frameOpen = false
  }

  /// Hands the buffered input to zstd and writes whatever it produces; with `ZSTD_e_end`
  /// keeps going until the frame (epilogue and checksum included) is out.
  private func compress(_ directive: ZSTD_EndDirective) throws {
    var source = ZSTD_inBuffer(src: input, size: inputCount, pos: 0)
    while true {
      var destination = ZSTD_outBuffer(dst: output, size: outputCapacity, pos: 0)
      let left = try Zstd.check(ZSTD_compressStream2(context, &destination, &source, directive)) { reason in
        StoreError(.io, "\(name): zstd compression failed: \(reason)", path: Descriptor.path(of: name))
      }
      if destination.pos > 0 {
        try Descriptor.writeAll(fileDescriptor, output, count: destination.pos, name: name)
        compressedBytes += Int64(destination.pos)
      }
      let done = directive == ZSTD_e_end ? left == 0 : source.pos == source.size
      if done { break }
    }
    inputCount = 0
  }

  /// Remembers the first error: after a failed write the frame cannot be completed.
  private func failing(_ body: () throws -> Void) throws {
    do { try body() } catch let error as StoreError {
      failure = error
      throw error
    }
  }
}

@available(*, unavailable) extension ZstdSink: Sendable {}
