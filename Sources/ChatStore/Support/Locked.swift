#if canImport(Glibc)
  import Glibc
#endif

/// A value reached only under a lock: `Synchronization.Mutex`'s `withLock`, on a
/// `pthread_mutex_t`.
///
/// ```swift
/// let pending = Locked<[String]>([])
/// pending.withLock { $0.append("hello") }
/// ```
///
/// Why not `Mutex`: on Linux it locks with atomics and futex calls compiled into the
/// Swift runtime, which ThreadSanitizer does not see, so it reports every access a
/// `Mutex` guards as a data race (`swift test --sanitize=thread`, issue 14: 60 false
/// reports in one run). ThreadSanitizer intercepts `pthread_mutex_lock`, so with this
/// type the reports left are real ones. See
/// <https://clang.llvm.org/docs/ThreadSanitizer.html>.
public final class Locked<Value: ~Copyable>: @unchecked Sendable {
  // @unchecked: `value` is only reached between `pthread_mutex_lock` and
  // `pthread_mutex_unlock` of `mutex`, which lives (never moved) as long as `self`.
  private var value: Value
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

  public init(_ value: consuming Value) {
    self.value = value
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// Runs `body` with the value, holding the lock; `body` must not call `withLock` on
  /// the same instance (the lock is not recursive).
  public func withLock<Result: ~Copyable, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&value)
  }
}
