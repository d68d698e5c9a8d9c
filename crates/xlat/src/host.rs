//! The host running the simulation (not part of any simulated machine): its memory, and
//! hints to its CPU.

/// The message for an allocation of `bytes` of host memory for `what` that the host cannot
/// make: the one wording of every such error, so users learn what to shrink.
pub fn cannot_allocate(bytes: u64, what: &str) -> String {
    format!("cannot allocate {} of host memory for {what}", crate::units::format_bytes(bytes))
}

/// The memory this process may use in bytes, or `None` where nothing can be read: the
/// host's RAM and swap (`/proc/meminfo`), or less where the process's address-space limit
/// (`ulimit -v`) or a memory limit of its cgroups (a container's) is lower. More than this
/// cannot be allocated or, where the kernel overcommits, not used.
pub fn memory() -> Option<u64> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let (ram, swap) = read("/proc/meminfo").as_deref().map_or((None, None), meminfo);
    let address_space = read("/proc/self/limits").as_deref().and_then(address_space_limit);
    let cgroup = read("/proc/self/cgroup").and_then(|groups| cgroup_limit(&groups, read));
    usable(ram, swap, address_space, cgroup)
}

/// The least of RAM plus swap, the address-space limit and the cgroup limit, those known. A
/// cgroup limit counts alone: a container may be allowed no swap at all.
fn usable(ram: Option<u64>, swap: Option<u64>, address_space: Option<u64>, cgroup: Option<u64>) -> Option<u64> {
    let host = ram.map(|ram| ram.saturating_add(swap.unwrap_or(0)));
    [host, address_space, cgroup].into_iter().flatten().min()
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

/// The lowest memory limit of this process's cgroup and its ancestors, given the text of
/// `/proc/self/cgroup` and a reader of files: `memory.max` under cgroup v2,
/// `memory.limit_in_bytes` under v1 (where unlimited is a number near 2^63). The hierarchy's
/// root is read too: a container that does not see its host's paths has its own group there.
fn cgroup_limit(groups: &str, read: impl Fn(&str) -> Option<String>) -> Option<u64> {
    const UNLIMITED_V1: u64 = 1 << 62;
    let hierarchies = groups.lines().filter_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        match controllers {
            "" => Some(("/sys/fs/cgroup", "memory.max", path)),
            _ if controllers.split(',').any(|c| c == "memory") => Some(("/sys/fs/cgroup/memory", "memory.limit_in_bytes", path)),
            _ => None,
        }
    });
    let limits = hierarchies.flat_map(|(root, file, path)| {
        let dirs = std::iter::successors(Some(path.trim_end_matches('/')), |dir| dir.rfind('/').map(|i| &dir[..i]));
        dirs.filter_map(|dir| read(&format!("{root}{dir}/{file}"))).collect::<Vec<_>>()
    });
    limits.filter_map(|text| text.trim().parse::<u64>().ok()).filter(|&limit| limit < UNLIMITED_V1).min()
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
            "/sys/fs/cgroup/slice/memory.max" => Some("2147483648\n".to_string()),
            "/sys/fs/cgroup/slice/app/memory.max" | "/sys/fs/cgroup/open/memory.max" => Some("max\n".to_string()),
            "/sys/fs/cgroup/memory/job/memory.limit_in_bytes" => Some("1073741824\n".to_string()),
            "/sys/fs/cgroup/memory/free/memory.limit_in_bytes" => Some("9223372036854771712\n".to_string()),
            "/sys/fs/cgroup/memory/memory.limit_in_bytes" => Some("3221225472\n".to_string()),
            _ => None,
        };
        assert_eq!(cgroup_limit("0::/box\n", files), Some(4 << 30));
        assert_eq!(cgroup_limit("0::/open\n", files), None);
        assert_eq!(cgroup_limit("0::/slice/app\n", files), Some(2 << 30), "a parent's limit holds");
        assert_eq!(cgroup_limit("5:cpu:/\n4:memory,hugetlb:/job\n0::/\n", files), Some(1 << 30));
        assert_eq!(cgroup_limit("4:memory:/docker/0123abcd\n", files), Some(3 << 30), "a container's own group at the root");
        assert_eq!(cgroup_limit("4:memory:/free\n0::/\n", files), Some(3 << 30));
        assert_eq!(cgroup_limit("", files), None);
    }

    #[test]
    fn usable_memory_is_the_least_limit_known() {
        let gib = |n: u64| Some(n << 30);
        assert_eq!(usable(gib(24), gib(2), None, None), gib(26), "RAM and swap");
        assert_eq!(usable(gib(24), None, gib(4), None), gib(4), "ulimit -v");
        assert_eq!(usable(gib(24), gib(8), None, gib(16)), gib(16), "a cgroup limit, without the host's swap");
        assert_eq!(usable(None, None, None, gib(1)), gib(1));
        assert_eq!(usable(Some(u64::MAX), Some(u64::MAX), None, None), Some(u64::MAX), "no overflow");
        assert_eq!(usable(None, gib(1), None, None), None);
    }
}
