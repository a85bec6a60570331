import CMalloc

/// The C heap of a long-running server or client process.
public enum Heap {
  /// Keeps freed memory for reuse instead of handing it back to the kernel after every
  /// burst. glibc's defaults trim the top of the heap whenever 128 KiB are free there, so
  /// a process that allocates and frees a batch's buffers each turn grows and shrinks its
  /// heap with `brk` and takes a page fault on every page it grows into again: 11% of the
  /// relay's CPU under a sender's backlog (decision 0012). Up to `trimThreshold` bytes stay
  /// mapped after a burst; what a process holds at rest grows by at most that much.
  public static func keepFreedMemoryForReuse(
    trimThreshold: Int32 = 8 << 20, topPad: Int32 = 1 << 20, mmapThreshold: Int32 = 1 << 20
  ) {
    _ = mallopt(M_TRIM_THRESHOLD, trimThreshold)
    _ = mallopt(M_TOP_PAD, topPad)
    // A fixed mmap threshold (which setting the trim threshold implies) keeps allocations
    // of up to `mmapThreshold` (1 MiB) on the heap, where freeing them costs no system call.
    _ = mallopt(M_MMAP_THRESHOLD, mmapThreshold)
  }
}
