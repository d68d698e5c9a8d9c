//! The host running the simulation (not part of any simulated machine): its memory, and
//! hints to its CPU.

/// The message for an allocation of `bytes` of host memory for `what` that the host cannot
/// make: the one wording of every such error, so users learn what to shrink.
pub fn cannot_allocate(bytes: u64, what: &str) -> String {
    format!("cannot allocate {} of host memory for {what}", crate::units::format_bytes(bytes))
}

/// The memory this process may use in bytes, or `None` where nothing can be read: the
/// host's RAM and swap (`/proc/meminfo`), or less where the process's address-space limit
/// (`ulimit -v`) or its cgroup's memory limit (a container's) is lower. More than this cannot
/// be allocated or, where the kernel overcommits, not used.
pub fn memory() -> Option<u64> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let (ram, swap) = read("/proc/meminfo").as_deref().map_or((None, None), meminfo);
    let cgroup = read("/proc/self/cgroup").and_then(|groups| cgroup_limit(&groups, |path| read(path)));
    let limits = [
        ram.map(|ram| ram + swap.unwrap_or(0)),
        read("/proc/self/limits").as_deref().and_then(address_space_limit),
        cgroup.map(|limit| limit.saturating_add(swap.unwrap_or(0))),
    ];
    limits.into_iter().flatten().min()
}

/// RAM and swap in bytes from the text of `/proc/meminfo`.
fn meminfo(info: &str) -> (Option<u64>, Option<u64>) {
    let bytes = |key: &str| -> Option<u64> {
        let line = info.lines().find(|l| l.starts_with(key))?;
        let kib: u64 = line[key.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
        kib.checked_mul(1024)
    };
    (bytes("MemTotal:"), bytes("SwapTotal:"))
}

/// The soft address-space limit from the text of `/proc/self/limits`; `None` when unlimited.
fn address_space_limit(limits: &str) -> Option<u64> {
    let line = limits.lines().find_map(|l| l.strip_prefix("Max address space"))?;
    line.split_whitespace().next()?.parse().ok()
}

/// The memory limit of this process's cgroup, given the text of `/proc/self/cgroup` and a
/// reader of files: `memory.max` under cgroup v2, `memory.limit_in_bytes` under v1. `None`
/// when unlimited (v1 writes that as a number near 2^63) or not found.
fn cgroup_limit(groups: &str, read: impl Fn(&str) -> Option<String>) -> Option<u64> {
    const UNLIMITED_V1: u64 = 1 << 62;
    let v2 = groups.lines().find_map(|l| l.strip_prefix("0::")).and_then(|path| read(&format!("/sys/fs/cgroup{path}/memory.max")));
    let v1 = || {
        let path = groups.lines().find_map(|l| l.split_once(":memory:").map(|(_, path)| path))?;
        read(&format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes"))
    };
    let limit: u64 = v2.or_else(v1)?.trim().parse().ok()?;
    (limit < UNLIMITED_V1).then_some(limit)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_gives_ram_and_swap_in_bytes() {
        let info = "MemTotal:       24684084 kB\nMemFree:        1 kB\nSwapTotal:      2048 kB\n";
        assert_eq!(meminfo(info), (Some(24684084 * 1024), Some(2048 * 1024)));
        assert_eq!(meminfo("MemTotal: lots kB\n"), (None, None));
    }

    #[test]
    fn the_address_space_limit_is_the_soft_one() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max stack size            8388608              unlimited            bytes     \n\
                      Max address space         1024000000           2048000000           bytes     \n";
        assert_eq!(address_space_limit(limits), Some(1_024_000_000));
        assert_eq!(address_space_limit(&limits.replace("1024000000 ", "unlimited  ")), None);
    }

    #[test]
    fn cgroup_limits_of_v2_and_v1() {
        let files = |path: &str| match path {
            "/sys/fs/cgroup/box/memory.max" => Some("4294967296\n".to_string()),
            "/sys/fs/cgroup/open/memory.max" => Some("max\n".to_string()),
            "/sys/fs/cgroup/memory/job/memory.limit_in_bytes" => Some("1073741824\n".to_string()),
            "/sys/fs/cgroup/memory/free/memory.limit_in_bytes" => Some("9223372036854771712\n".to_string()),
            _ => None,
        };
        assert_eq!(cgroup_limit("0::/box\n", files), Some(4 << 30));
        assert_eq!(cgroup_limit("0::/open\n", files), None);
        assert_eq!(cgroup_limit("5:cpu:/\n4:memory:/job\n0::/\n", files), Some(1 << 30));
        assert_eq!(cgroup_limit("4:memory:/free\n0::/\n", files), None);
        assert_eq!(cgroup_limit("", files), None);
    }
}
