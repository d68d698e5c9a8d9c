//! Hints to the host CPU running the simulation (not part of any simulated machine).

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
