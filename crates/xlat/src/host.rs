//! The host running the simulation (not part of any simulated machine): its memory, and
//! hints to its CPU.

/// The message for an allocation of `bytes` of host memory for `what` that the host cannot
/// make: the one wording of every such error, so users learn what to shrink.
pub fn cannot_allocate(bytes: u64, what: &str) -> String {
    format!("cannot allocate {} of host memory for {what}", crate::units::format_bytes(bytes))
}

/// The host's memory in bytes, RAM and swap (from `/proc/meminfo`), or `None` where it
/// cannot be read: more than this cannot be allocated or, where the kernel overcommits, not
/// used.
pub fn memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = |key: &str| -> Option<u64> {
        let line = info.lines().find(|l| l.starts_with(key))?;
        line[key.len()..].trim().trim_end_matches("kB").trim().parse().ok()
    };
    Some((kib("MemTotal:")? + kib("SwapTotal:").unwrap_or(0)) * 1024)
}

/// Asks the host CPU to start loading the cache line holding `value` into its caches, so that
/// a later read of it does not wait for memory. A hint only: it has no visible effect, and
/// compiles to nothing on hosts without a prefetch instruction.
///
/// Page-table walks read leaves spread over megabytes; the references of a batch are known in
/// advance, so the machine requests their leaf lines several references before it walks.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching never reads or writes memory as the program sees it and never
    // faults; the pointer comes from a live reference in any case.
    #[allow(unsafe_code)]
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(value).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
