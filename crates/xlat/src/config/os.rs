//! Validation of the OS model's configuration: placement, eviction and recency, each error
//! naming its field.

use super::presets;
use super::raw::{RawIceberg, RawOs};
use super::validate::{err, page_size_of};
use crate::os::eviction::RecencyKind;
use crate::os::iceberg::IcebergSpec;
use crate::os::readahead::MAX_PAGE_CLUSTER;
use crate::os::{EvictionSpec, KhugepagedSpec, OsSpec, Placement, PlacementSpec, Recency, Thp};
use crate::types::PageSize;
use crate::units::{exact_bytes, format_bytes};
use crate::Result;

/// Default page accesses between accessed-bit scans (a reference counts once per page it
/// touches).
pub const DEFAULT_SCAN_PERIOD: u64 = 1_000_000;
/// Default fraction of hot pages read per scan (the prototype's 20%).
pub const DEFAULT_HOT_SAMPLE: f64 = 0.2;
/// Default scans of history per page (the prototype's 8).
pub const DEFAULT_SCAN_HISTORY: u32 = 8;
/// Default `page_cluster`: the kernel's `vm.page-cluster`, up to 8 pages read per major fault.
pub const DEFAULT_PAGE_CLUSTER: u32 = 3;
/// Default ways of set-associative placement.
pub const DEFAULT_SET_WAYS: u64 = 16;
/// `over`'s fields where given, else `base`'s.
pub fn merge(base: RawOs, over: Option<&RawOs>) -> RawOs {
    let Some(o) = over else { return base };
    RawOs {
        memory: o.memory.or(base.memory),
        page_size: o.page_size.or(base.page_size),
        thp: o.thp.or(base.thp),
        khugepaged: o.khugepaged.or(base.khugepaged),
        page_table: o.page_table.or(base.page_table),
        kernel_work: o.kernel_work.or(base.kernel_work),
        placement: o.placement.or(base.placement),
        ways: o.ways.or(base.ways),
        iceberg: o.iceberg.or(base.iceberg),
        eviction: o.eviction.or(base.eviction),
        reserve: o.reserve.clone().or(base.reserve),
        inactive_ratio: o.inactive_ratio.clone().or(base.inactive_ratio),
        workingset: o.workingset.clone().or(base.workingset),
        look_twice: o.look_twice.clone().or(base.look_twice),
        swap_cache: o.swap_cache.or(base.swap_cache),
        page_cluster: o.page_cluster.or(base.page_cluster),
        swap: o.swap.or(base.swap),
        swap_cache_cow: o.swap_cache_cow.or(base.swap_cache_cow),
        delta: o.delta.clone().or(base.delta),
        recency: o.recency.or(base.recency),
        scan_period: o.scan_period.or(base.scan_period),
        hot_sample: o.hot_sample.or(base.hot_sample),
        scan_history: o.scan_history.or(base.scan_history),
        age_window: o.age_window.or(base.age_window),
    }
}

/// Validates `raw` (already merged over its preset) into an [`OsSpec`].
pub fn validate(raw: &RawOs, path: &str) -> Result<OsSpec> {
    let defaults = presets::default_os();
    let page_size = raw.page_size.or(defaults.page_size).expect("default page size").0;
    let page_size = page_size_of(page_size, &format!("{path}.page_size"))?;
    let memory = raw.memory.or(defaults.memory).expect("default memory").0;
    let frames = whole_pages(memory, page_size, format!("{path}.memory"))?;
    if frames > crate::os::PageTable::MAX_FRAMES {
        return err(format!("{path}.memory"), format!("{} holds more than 2^32 - 2 frames", exact_bytes(memory)));
    }
    let placement = placement(raw, path, frames, page_size)?;
    let eviction = eviction(raw, path, &placement)?;
    let recency = recency(raw, path, eviction)?;
    let swap_fields = [
        ("swap_cache", raw.swap_cache.is_some()),
        ("page_cluster", raw.page_cluster.is_some()),
        ("swap", raw.swap.is_some()),
        ("swap_cache_cow", raw.swap_cache_cow.is_some()),
    ];
    if let Some((field, _)) = swap_fields.iter().find(|(_, given)| *given).filter(|_| !eviction.evicts()) {
        return err(format!("{path}.{field}"), format!("nothing is swapped without an `os.eviction` policy: set one, or drop `{field}`"));
    }
    let swap_cache = raw.swap_cache.unwrap_or(true);
    let page_cluster = page_cluster(raw, path, eviction, swap_cache)?;
    let swap_slots = raw.swap.map(|bytes| whole_pages(bytes.0, page_size, format!("{path}.swap"))).transpose()?;
    let swap_cache_cow = swap_cache_cow(raw, path, eviction, swap_cache)?;
    fits_host(memory, host_bytes(frames, eviction, recency, swap_cache), crate::host::memory(), &format!("{path}.memory"))?;
    if raw.age_window == Some(0) {
        return err(format!("{path}.age_window"), "a window needs at least one eviction");
    }
    if raw.age_window.is_some() && !eviction.evicts() {
        return err(format!("{path}.age_window"), "the eviction-age metric needs an `os.eviction` policy (nothing is evicted without one)");
    }
    let page_table = raw.page_table.unwrap_or_default();
    let kernel_work = raw.kernel_work.unwrap_or_default();
    kernel_work.check(&format!("{path}.kernel_work"))?;
    let (thp, khugepaged) = thp(raw, path, page_size, &placement)?;
    let spec = OsSpec { memory, page_size, thp, khugepaged, page_table, kernel_work, placement, eviction, recency, age_window: raw.age_window, swap_cache, page_cluster, swap_slots, swap_cache_cow };
    spec.page_table.check(&spec, &format!("{path}.page_table"))?;
    Ok(spec)
}

/// Transparent huge pages and khugepaged's parameters: THP maps 2 MiB pages beside 4 KiB
/// ones, from runs of 512 free frames (see [`crate::os::thp`]), so it needs 4 KiB pages and
/// a fully associative placement.
fn thp(raw: &RawOs, path: &str, page_size: PageSize, placement: &PlacementSpec) -> Result<(Thp, KhugepagedSpec)> {
    let thp = raw.thp.unwrap_or_default();
    let khugepaged = raw.khugepaged.unwrap_or_default();
    if thp == Thp::Never {
        if raw.khugepaged.is_some() {
            return err(format!("{path}.khugepaged"), "khugepaged collapses ranges into transparent huge pages: set `thp = \"always\"`, or drop `khugepaged`");
        }
        return Ok((thp, khugepaged));
    }
    let field = format!("{path}.thp");
    if page_size != PageSize::Size4K {
        return err(field, format!("transparent huge pages are 2 MiB pages beside 4 KiB ones: set `page_size = \"4KiB\"` (it is {page_size})"));
    }
    if !placement.is_fully_associative() {
        return err(field, "a transparent huge page takes 512 contiguous frames, which set-associative and iceberg placement hash apart: use `placement = \"sequential\"` or `\"random\"`");
    }
    khugepaged.check(&format!("{path}.khugepaged"))?;
    Ok((thp, khugepaged))
}

/// `bytes` (of the field `field`) in pages of `page_size`: an error unless a positive multiple.
fn whole_pages(bytes: u64, page_size: PageSize, field: String) -> Result<u64> {
    if bytes < page_size.bytes() || bytes % page_size.bytes() != 0 {
        return err(field, format!("{} is not a positive multiple of the {page_size} page size", exact_bytes(bytes)));
    }
    Ok(bytes / page_size.bytes())
}

/// Whether stores copy pages out of the swap cache: as the paper's Linux 5.11 does where there
/// is a swap cache, unless configured (the caller checked that an eviction policy is).
fn swap_cache_cow(raw: &RawOs, path: &str, eviction: EvictionSpec, swap_cache: bool) -> Result<bool> {
    match raw.swap_cache_cow {
        None => Ok(eviction.evicts() && swap_cache),
        Some(true) if !swap_cache => err(format!("{path}.swap_cache_cow"), "pages are copied out of the swap cache: set `swap_cache = true`, or `swap_cache_cow = false`"),
        Some(cow) => Ok(cow),
    }
}

/// Swap readahead's `page_cluster`: the kernel's default (3, up to 8 pages per fault) where
/// pages are swapped and the swap cache holds the pages read, else 0 (the caller checked that
/// an eviction policy is configured if it is given).
fn page_cluster(raw: &RawOs, path: &str, eviction: EvictionSpec, swap_cache: bool) -> Result<u32> {
    let field = format!("{path}.page_cluster");
    let Some(given) = raw.page_cluster else {
        return Ok(if eviction.evicts() && swap_cache { DEFAULT_PAGE_CLUSTER } else { 0 });
    };
    if given > MAX_PAGE_CLUSTER {
        return err(field, format!("{given} is above {MAX_PAGE_CLUSTER}: the kernel reads at most 2^{MAX_PAGE_CLUSTER} pages per fault"));
    }
    if given > 0 && !swap_cache {
        return err(field, "readahead keeps the pages it reads in the swap cache: set `swap_cache = true`, or `page_cluster = 0`");
    }
    Ok(given)
}

/// Bytes of host memory the OS model allocates for `frames` frames of simulated memory when a
/// machine is built: their state (`os::Frames`: 22 bytes per frame under an `eviction`
/// policy, one bit without), a byte per frame more for Linux-like reclaim's referenced bits
/// and lazy Iceberg LRU's marks, one for the swap cache's flags, and two for the accessed
/// bits and histories of `recency` scans. Pages of it are touched only as frames are used,
/// but the allocation itself fails, aborting the process, when it is larger than the host's
/// memory.
fn host_bytes(frames: u64, eviction: EvictionSpec, recency: Recency, swap_cache: bool) -> u64 {
    let policy = eviction.frame_bytes();
    let evicts = eviction.evicts();
    let cache = u64::from(evicts && swap_cache);
    let scans = if matches!(recency, Recency::Scan { .. }) { 2 } else { 0 };
    let frame_state = crate::os::frames::Frames::host_bytes(frames, evicts);
    frame_state.saturating_add(frames.saturating_mul(policy + cache + scans))
}

/// Checks that the host, with `host` bytes of memory for this process (unknown when `None`), can
/// hold the `needed` bytes of state of `memory` of simulated memory, so that a too large
/// memory is an error naming the field rather than an allocation failure once the run has
/// begun.
fn fits_host(memory: u64, needed: u64, host: Option<u64>, path: &str) -> Result<()> {
    let Some(host) = shortfall(needed, host) else { return Ok(()) };
    let what = format!("the {} of simulated memory (this process may use {})", format_bytes(memory), format_bytes(host));
    err(path, crate::host::cannot_allocate(needed, &what))
}

/// The `host` bytes this process may use, when `needed` is more (`None` also where the host's
/// memory is unknown).
fn shortfall(needed: u64, host: Option<u64>) -> Option<u64> {
    host.filter(|&host| needed > host)
}

/// Bytes of host memory the frame state of `os` takes ([`host_bytes`]).
fn frame_state_bytes(os: &OsSpec) -> u64 {
    host_bytes(os.memory / os.page_size.bytes(), os.eviction, os.recency, os.swap_cache)
}

/// Checks that the host, with `host` bytes for this process, can hold machine `name` at
/// `path`: its own structures (`structures` bytes: TLBs, walk caches, the cycle model's
/// caches) and the frame state of its memory `os`, which alone was checked with
/// `os.memory`. The message gives both parts, so that the user sees what to shrink.
pub(super) fn machine_fits(os: &OsSpec, structures: u64, name: &str, host: Option<u64>, path: &str) -> Result<()> {
    let frames = frame_state_bytes(os);
    let Some(host) = shortfall(structures.saturating_add(frames), host) else { return Ok(()) };
    let what = format!(
        "machine `{name}`: {} for its TLBs and caches, {} for the frame state of its {} of simulated memory (this process may use {})",
        format_bytes(structures),
        format_bytes(frames),
        format_bytes(os.memory),
        format_bytes(host)
    );
    err(path, crate::host::cannot_allocate(structures.saturating_add(frames), &what))
}

/// Checks that the host, with `host` bytes for this process, can hold at once the machines
/// one workload runs on (all are built before it starts), each given by its memory and the
/// bytes of its own structures; `path` names the workload. Each machine alone was checked
/// with its own fields.
pub(super) fn fit_together<'a>(machines: impl Iterator<Item = (&'a OsSpec, u64)>, host: Option<u64>, path: &str) -> Result<()> {
    let (count, memory, needed) = machines.fold((0, 0u64, 0u64), |(n, bytes, needed), (os, structures)| {
        (n + 1, bytes.saturating_add(os.memory), needed.saturating_add(frame_state_bytes(os)).saturating_add(structures))
    });
    let Some(host) = shortfall(needed, host).filter(|_| count > 1) else { return Ok(()) };
    let what = format!(
        "the {count} machines it runs on at once ({} of simulated memory in all; this process may use {})",
        format_bytes(memory),
        format_bytes(host)
    );
    err(path, crate::host::cannot_allocate(needed, &what))
}

fn placement(raw: &RawOs, path: &str, frames: u64, page_size: PageSize) -> Result<PlacementSpec> {
    let kind = raw.placement.unwrap_or(Placement::Random);
    if raw.ways.is_some() && kind != Placement::SetAssociative {
        return err(format!("{path}.ways"), "`ways` applies to `placement = \"set-associative\"` only");
    }
    if raw.iceberg.is_some() && kind != Placement::Iceberg {
        return err(format!("{path}.iceberg"), "`iceberg` parameters apply to `placement = \"iceberg\"` only");
    }
    Ok(match kind {
        Placement::Random => PlacementSpec::Random,
        Placement::Sequential => PlacementSpec::Sequential,
        Placement::SetAssociative => {
            let ways = raw.ways.unwrap_or(DEFAULT_SET_WAYS);
            if ways == 0 || frames % ways != 0 {
                return err(format!("{path}.ways"), format!("{ways} ways do not divide the {frames} frames of memory"));
            }
            PlacementSpec::SetAssociative { ways }
        }
        Placement::Iceberg => {
            if page_size != PageSize::Size4K {
                return err(format!("{path}.page_size"), "iceberg placement places 4 KiB pages");
            }
            let spec = iceberg(&raw.iceberg.unwrap_or_default());
            spec.check(frames).map_err(|e| crate::Error::config(format!("{path}.iceberg"), e))?;
            PlacementSpec::Iceberg(spec)
        }
    })
}

fn iceberg(raw: &RawIceberg) -> IcebergSpec {
    let d = IcebergSpec::default();
    IcebergSpec {
        front: raw.front.unwrap_or(d.front),
        back: raw.back.unwrap_or(d.back),
        choices: raw.choices.unwrap_or(d.choices),
        backyard: raw.backyard.unwrap_or(d.backyard),
        tie_break: raw.tie_break.unwrap_or(d.tie_break),
        cpfn_bits: raw.cpfn_bits.unwrap_or(d.cpfn_bits),
        hash: raw.hash.unwrap_or(d.hash),
    }
}

/// The eviction policy of `raw`, checked against `placement` (`none` when not given).
fn eviction(raw: &RawOs, path: &str, placement: &PlacementSpec) -> Result<EvictionSpec> {
    if let Some((field, value)) = raw.moved() {
        let policy = raw.eviction.map_or("<policy>", |e| e.name());
        return err(
            format!("{path}.{field}"),
            format!("`{field}` is a parameter of the eviction policy now: write it in the policy's table, `eviction = {{ kind = \"{policy}\", {field} = {value} }}`"),
        );
    }
    let spec = raw.eviction.unwrap_or_default();
    spec.check(placement, &format!("{path}.eviction"))?;
    Ok(spec)
}

fn recency(raw: &RawOs, path: &str, eviction: EvictionSpec) -> Result<Recency> {
    let kind = raw.recency.unwrap_or(RecencyKind::Access);
    let scan_fields = [("scan_period", raw.scan_period.is_some()), ("hot_sample", raw.hot_sample.is_some()), ("scan_history", raw.scan_history.is_some())];
    if let Some((field, _)) = scan_fields.iter().find(|(_, given)| *given).filter(|_| kind != RecencyKind::Scan) {
        return err(format!("{path}.{field}"), format!("`{field}` applies to `recency = \"scan\"` only"));
    }
    if kind != RecencyKind::Access && !eviction.evicts() {
        return err(format!("{path}.recency"), "recency is read by eviction only: set an `os.eviction` policy, or drop `recency`");
    }
    Ok(match kind {
        RecencyKind::Access => Recency::Access,
        RecencyKind::Fill => Recency::Fill,
        RecencyKind::Scan => {
            if matches!(eviction, EvictionSpec::Linux(_)) {
                return err(format!("{path}.recency"), "Linux-like reclaim keeps its own referenced bits; use `access` or `fill`");
            }
            let period = raw.scan_period.unwrap_or(DEFAULT_SCAN_PERIOD);
            if period == 0 {
                return err(format!("{path}.scan_period"), "the scan period must be at least one page access");
            }
            let hot_sample = raw.hot_sample.unwrap_or(DEFAULT_HOT_SAMPLE);
            if !(0.0..=1.0).contains(&hot_sample) {
                return err(format!("{path}.hot_sample"), format!("hot_sample must be in [0, 1], not {hot_sample}"));
            }
            let history = raw.scan_history.unwrap_or(DEFAULT_SCAN_HISTORY);
            if !(1..=8).contains(&history) {
                return err(format!("{path}.scan_history"), format!("the history keeps 1 to 8 scans, not {history}"));
            }
            Recency::Scan { period, hot_sample, history }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_beyond_the_host_is_an_error_naming_the_bytes_needed() {
        let frames = 15u64 << 28; // 15 TiB of 4 KiB frames
        let needed = host_bytes(frames, EvictionSpec::Lru(Default::default()), Recency::Access, false);
        let e = fits_host(15 << 40, needed, Some(16 << 30), "machine[0].os.memory").unwrap_err().to_string();
        assert!(e.starts_with("machine[0].os.memory: cannot allocate 82.97GiB of host memory for the 15TiB of simulated memory (this process may use 16GiB)"), "{e}");
        assert!(fits_host(16 << 30, host_bytes(1 << 22, EvictionSpec::Lru(Default::default()), Recency::Access, true), Some(16 << 30), "m").is_ok());
        assert!(fits_host(15 << 40, needed, None, "m").is_ok(), "no check where the host's memory is unknown");
    }

    #[test]
    fn a_memory_that_never_evicts_costs_a_bit_per_frame() {
        // 15 TiB without eviction: the occupancy bitset alone, 480 MiB.
        let frames = 15u64 << 28;
        assert_eq!(host_bytes(frames, EvictionSpec::default(), Recency::Access, true), 480 << 20);
        assert!(fits_host(15 << 40, host_bytes(frames, EvictionSpec::default(), Recency::Access, true), Some(1 << 30), "m").is_ok());
        // Policies and scans with per-frame vectors of their own: 22 bytes and a bit, and 1 or 2
        // (Linux-like reclaim: 5, its flags and generations).
        let scan = Recency::Scan { period: 1000, hot_sample: 0.2, history: 8 };
        assert_eq!(host_bytes(8, EvictionSpec::Lru(Default::default()), scan, false), 8 * 24 + 1);
        assert_eq!(host_bytes(8, EvictionSpec::Lru(Default::default()), scan, true), 8 * 25 + 1);
        assert_eq!(host_bytes(8, EvictionSpec::Linux(crate::os::eviction::LinuxSpec { reserve: 0.0, inactive_ratio: crate::os::InactiveRatio::Kernel, workingset: true, look_twice: true }), Recency::Access, false), 8 * 27 + 1);
    }

    #[test]
    fn the_machines_of_a_workload_must_fit_the_host_together() {
        let os = |memory: u64| OsSpec { eviction: EvictionSpec::Lru(Default::default()), ..OsSpec::simple(memory, PlacementSpec::Sequential) };
        let (half, third) = (os(7 << 40), os(5 << 40));
        // 12 TiB of 4 KiB frames need 66.38 GiB; each memory alone (38.72, 27.66 GiB) fits 40 GiB.
        let e = fit_together([&half, &third].into_iter().map(|os| (os, 0)), Some(40 << 30), "workload[1]").unwrap_err().to_string();
        assert!(e.starts_with("workload[1]: cannot allocate 66.38GiB of host memory for the 2 machines it runs on at once (12TiB of simulated memory in all; this process may use 40GiB)"), "{e}");
        let never_evicts = OsSpec::simple(12 << 40, PlacementSpec::Sequential);
        assert!(fit_together([&never_evicts, &never_evicts].into_iter().map(|os| (os, 0)), Some(1 << 30), "w").is_ok(), "a bit per frame: 768 MiB");
        assert!(fit_together([&half, &third].into_iter().map(|os| (os, 0)), Some(70 << 30), "w").is_ok());
        assert!(fit_together([&half, &third].into_iter().map(|os| (os, 0)), None, "w").is_ok(), "no check where the host's memory is unknown");
        assert!(fit_together([&os(15 << 40)].into_iter().map(|os| (os, 0)), Some(1 << 30), "w").is_ok(), "one machine is checked with its own field");
        // TLBs and caches count with the frame state.
        let small = OsSpec::simple(64 << 20, PlacementSpec::Sequential);
        let e = fit_together([(&small, 600 << 20), (&small, 600 << 20)].into_iter(), Some(1 << 30), "w").unwrap_err().to_string();
        assert!(e.starts_with("w: cannot allocate 1.17GiB of host memory for the 2 machines"), "{e}");
    }

    #[test]
    fn a_machine_must_fit_the_host_with_its_tlbs_and_caches() {
        let os = OsSpec::simple(64 << 20, PlacementSpec::Sequential);
        let e = machine_fits(&os, 2 << 30, "big", Some(1 << 30), "machine[3]").unwrap_err().to_string();
        assert!(e.starts_with("machine[3]: cannot allocate 2.00GiB of host memory for machine `big`: 2GiB for its TLBs and caches, 2KiB for the frame state of its 64MiB of simulated memory (this process may use 1GiB)"), "{e}");
        assert!(machine_fits(&os, 1 << 29, "small", Some(1 << 30), "m").is_ok());
        assert!(machine_fits(&os, u64::MAX, "any", None, "m").is_ok(), "no check where the host's memory is unknown");
    }

    #[test]
    fn readahead_defaults_to_the_kernels_where_pages_are_swapped_through_the_swap_cache() {
        let cluster = |eviction: Option<EvictionSpec>, swap_cache: Option<bool>| {
            let raw = RawOs { eviction, swap_cache, placement: Some(Placement::Random), ..presets::default_os() };
            validate(&raw, "os").unwrap().page_cluster
        };
        assert_eq!(cluster(Some(EvictionSpec::named("lru").unwrap()), None), DEFAULT_PAGE_CLUSTER);
        assert_eq!(cluster(Some(EvictionSpec::named("linux").unwrap()), Some(true)), DEFAULT_PAGE_CLUSTER);
        assert_eq!(cluster(Some(EvictionSpec::named("lru").unwrap()), Some(false)), 0, "no swap cache to read into");
        assert_eq!(cluster(None, None), 0, "nothing swapped");
        let raw = RawOs { eviction: Some(EvictionSpec::named("lru").unwrap()), page_cluster: Some(0), ..presets::default_os() };
        assert_eq!(validate(&raw, "os").unwrap().page_cluster, 0);
    }

    #[test]
    fn stores_copy_pages_out_of_the_swap_cache_by_default_where_there_is_one() {
        let cow = |eviction: Option<EvictionSpec>, swap_cache: Option<bool>, given: Option<bool>| {
            let raw = RawOs { eviction, swap_cache, swap_cache_cow: given, ..presets::default_os() };
            validate(&raw, "os").map(|spec| spec.swap_cache_cow).map_err(|e| e.to_string())
        };
        assert_eq!(cow(Some(EvictionSpec::named("lru").unwrap()), None, None), Ok(true));
        assert_eq!(cow(Some(EvictionSpec::named("lru").unwrap()), Some(false), None), Ok(false));
        assert_eq!(cow(Some(EvictionSpec::named("lru").unwrap()), None, Some(false)), Ok(false));
        assert_eq!(cow(None, None, None), Ok(false));
        let e = cow(Some(EvictionSpec::named("lru").unwrap()), Some(false), Some(true)).unwrap_err();
        assert!(e.starts_with("os.swap_cache_cow: pages are copied out of the swap cache"), "{e}");
        let e = cow(None, None, Some(false)).unwrap_err();
        assert!(e.starts_with("os.swap_cache_cow: nothing is swapped"), "{e}");
    }

    #[test]
    fn eviction_errors_spell_policies_as_files_do() {
        let raw = RawOs { eviction: Some(EvictionSpec::named("horizon-lru").unwrap()), ..presets::default_os() };
        let e = validate(&raw, "os").unwrap_err().to_string();
        assert!(e.contains("`horizon-lru` eviction needs iceberg placement"), "{e}");
    }
}
