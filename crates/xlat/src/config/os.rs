//! Validation of the OS model's configuration: placement, eviction and recency, each error
//! naming its field.

use super::presets;
use super::raw::{RawIceberg, RawInactiveRatio, RawOs};
use super::validate::{err, page_size_of};
use crate::os::eviction::{EvictionKind, InactiveRatio, RecencyKind};
use crate::os::iceberg::IcebergSpec;
use crate::os::readahead::MAX_PAGE_CLUSTER;
use crate::os::{EvictionSpec, OsSpec, Placement, PlacementSpec, Recency};
use crate::types::PageSize;
use crate::units::{exact_bytes, format_bytes};
use crate::Result;

/// Default fraction of memory Linux-like reclaim keeps free: the Mosaic paper observed Linux
/// start swapping at about 99.2% utilization (zone watermarks).
pub const DEFAULT_RESERVE: f64 = 0.008;
/// The largest fixed active:inactive ratio (the kernel's rule reaches 100 at 1 TiB).
const MAX_INACTIVE_RATIO: u32 = 1000;
/// Default δ of Iceberg LRU: about 13% of memory stays free for the paper's parameters.
pub const DEFAULT_DELTA: f64 = 0.13;
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
        placement: o.placement.or(base.placement),
        ways: o.ways.or(base.ways),
        iceberg: o.iceberg.or(base.iceberg),
        eviction: o.eviction.or(base.eviction),
        reserve: o.reserve.or(base.reserve),
        inactive_ratio: o.inactive_ratio.or(base.inactive_ratio),
        workingset: o.workingset.or(base.workingset),
        look_twice: o.look_twice.or(base.look_twice),
        swap_cache: o.swap_cache.or(base.swap_cache),
        page_cluster: o.page_cluster.or(base.page_cluster),
        swap: o.swap.or(base.swap),
        swap_cache_cow: o.swap_cache_cow.or(base.swap_cache_cow),
        delta: o.delta.or(base.delta),
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
    if let Some((field, _)) = swap_fields.iter().find(|(_, given)| *given).filter(|_| eviction == EvictionSpec::None) {
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
    if raw.age_window.is_some() && eviction == EvictionSpec::None {
        return err(format!("{path}.age_window"), "the eviction-age metric needs an `os.eviction` policy (nothing is evicted without one)");
    }
    Ok(OsSpec { memory, page_size, placement, eviction, recency, age_window: raw.age_window, swap_cache, page_cluster, swap_slots, swap_cache_cow })
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
        None => Ok(eviction != EvictionSpec::None && swap_cache),
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
        return Ok(if eviction != EvictionSpec::None && swap_cache { DEFAULT_PAGE_CLUSTER } else { 0 });
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
    let policy = match eviction {
        EvictionSpec::Linux { .. } | EvictionSpec::LazyIcebergLru { .. } => 1,
        _ => 0,
    };
    let evicts = eviction != EvictionSpec::None;
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

/// Checks that the host, with `host` bytes for this process, can hold at once the frame state
/// of the memories `oses` of the machines one workload runs on (all are built before it
/// starts); `path` names the workload. Each memory alone was checked with its machine.
pub(super) fn fit_together<'a>(oses: impl Iterator<Item = &'a OsSpec>, host: Option<u64>, path: &str) -> Result<()> {
    let (count, memory, needed) = oses.fold((0, 0u64, 0u64), |(n, bytes, needed), os| {
        let frames = os.memory / os.page_size.bytes();
        (n + 1, bytes.saturating_add(os.memory), needed.saturating_add(host_bytes(frames, os.eviction, os.recency, os.swap_cache)))
    });
    let Some(host) = shortfall(needed, host).filter(|_| count > 1) else { return Ok(()) };
    let what = format!(
        "the {count} machines it runs on at once ({} of simulated memory in all; this process may use {})",
        format_bytes(memory),
        format_bytes(host)
    );
    err(path, crate::host::cannot_allocate(needed, &what))
}

/// How a unit variant (`EvictionKind::HorizonLru`) is written in files (`horizon-lru`), for
/// messages that speak the configuration's language.
fn spelling(value: &impl serde::Serialize) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
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

fn fraction(value: f64, field: String, what: &str) -> Result<f64> {
    if (0.0..1.0).contains(&value) {
        Ok(value)
    } else {
        err(field, format!("{what} must be a fraction in [0, 1), not {value}"))
    }
}

/// Linux-like reclaim's active:inactive ratio: the kernel's rule unless a ratio is given.
fn inactive_ratio(raw: Option<RawInactiveRatio>, path: &str) -> Result<InactiveRatio> {
    match raw {
        None | Some(RawInactiveRatio::Kernel) => Ok(InactiveRatio::Kernel),
        Some(RawInactiveRatio::Fixed(ratio)) => match u32::try_from(ratio) {
            Ok(ratio @ 1..=MAX_INACTIVE_RATIO) => Ok(InactiveRatio::Fixed(ratio)),
            _ => err(path, format!("a ratio of {ratio} is outside 1..={MAX_INACTIVE_RATIO} (or \"kernel\")")),
        },
    }
}

fn eviction(raw: &RawOs, path: &str, placement: &PlacementSpec) -> Result<EvictionSpec> {
    let kind = raw.eviction.unwrap_or(EvictionKind::None);
    let linux_fields = [
        ("reserve", raw.reserve.is_some()),
        ("inactive_ratio", raw.inactive_ratio.is_some()),
        ("workingset", raw.workingset.is_some()),
        ("look_twice", raw.look_twice.is_some()),
    ];
    if let Some((field, _)) = linux_fields.iter().find(|(_, given)| *given).filter(|_| kind != EvictionKind::Linux) {
        return err(format!("{path}.{field}"), format!("`{field}` applies to `eviction = \"linux\"` only"));
    }
    if raw.delta.is_some() && !matches!(kind, EvictionKind::IcebergLru | EvictionKind::LazyIcebergLru) {
        return err(format!("{path}.delta"), "`delta` applies to `eviction = \"iceberg-lru\"` and `\"lazy-iceberg-lru\"` only");
    }
    let iceberg = matches!(placement, PlacementSpec::Iceberg(_));
    let needs = |ok: bool, what: &str| if ok { Ok(()) } else { err(format!("{path}.eviction"), format!("`{}` eviction needs {what} placement", spelling(&kind))) };
    Ok(match kind {
        EvictionKind::None => EvictionSpec::None,
        EvictionKind::Lru => EvictionSpec::Lru,
        EvictionKind::Linux => {
            needs(placement.is_fully_associative(), "fully associative (random or sequential)")?;
            EvictionSpec::Linux {
                reserve: fraction(raw.reserve.unwrap_or(DEFAULT_RESERVE), format!("{path}.reserve"), "reserve")?,
                inactive_ratio: inactive_ratio(raw.inactive_ratio, &format!("{path}.inactive_ratio"))?,
                workingset: raw.workingset.unwrap_or(true),
                look_twice: raw.look_twice.unwrap_or(true),
            }
        }
        EvictionKind::HorizonLru => {
            needs(iceberg, "iceberg")?;
            EvictionSpec::HorizonLru
        }
        EvictionKind::IcebergLru | EvictionKind::LazyIcebergLru => {
            needs(iceberg, "iceberg")?;
            let delta = fraction(raw.delta.unwrap_or(DEFAULT_DELTA), format!("{path}.delta"), "delta")?;
            if delta == 0.0 {
                return err(format!("{path}.delta"), "delta must be above 0 (use `lru` for no slack)");
            }
            if kind == EvictionKind::IcebergLru {
                EvictionSpec::IcebergLru { delta }
            } else {
                EvictionSpec::LazyIcebergLru { delta }
            }
        }
    })
}

fn recency(raw: &RawOs, path: &str, eviction: EvictionSpec) -> Result<Recency> {
    let kind = raw.recency.unwrap_or(RecencyKind::Access);
    let scan_fields = [("scan_period", raw.scan_period.is_some()), ("hot_sample", raw.hot_sample.is_some()), ("scan_history", raw.scan_history.is_some())];
    if let Some((field, _)) = scan_fields.iter().find(|(_, given)| *given).filter(|_| kind != RecencyKind::Scan) {
        return err(format!("{path}.{field}"), format!("`{field}` applies to `recency = \"scan\"` only"));
    }
    if kind != RecencyKind::Access && eviction == EvictionSpec::None {
        return err(format!("{path}.recency"), "recency is read by eviction only: set an `os.eviction` policy, or drop `recency`");
    }
    Ok(match kind {
        RecencyKind::Access => Recency::Access,
        RecencyKind::Fill => Recency::Fill,
        RecencyKind::Scan => {
            if matches!(eviction, EvictionSpec::Linux { .. }) {
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
        let needed = host_bytes(frames, EvictionSpec::Lru, Recency::Access, false);
        let e = fits_host(15 << 40, needed, Some(16 << 30), "machine[0].os.memory").unwrap_err().to_string();
        assert!(e.starts_with("machine[0].os.memory: cannot allocate 82.97GiB of host memory for the 15TiB of simulated memory (this process may use 16GiB)"), "{e}");
        assert!(fits_host(16 << 30, host_bytes(1 << 22, EvictionSpec::Lru, Recency::Access, true), Some(16 << 30), "m").is_ok());
        assert!(fits_host(15 << 40, needed, None, "m").is_ok(), "no check where the host's memory is unknown");
    }

    #[test]
    fn a_memory_that_never_evicts_costs_a_bit_per_frame() {
        // 15 TiB without eviction: the occupancy bitset alone, 480 MiB.
        let frames = 15u64 << 28;
        assert_eq!(host_bytes(frames, EvictionSpec::None, Recency::Access, true), 480 << 20);
        assert!(fits_host(15 << 40, host_bytes(frames, EvictionSpec::None, Recency::Access, true), Some(1 << 30), "m").is_ok());
        // Policies and scans with per-frame vectors of their own: 22 bytes and a bit, and 1 or 2.
        let scan = Recency::Scan { period: 1000, hot_sample: 0.2, history: 8 };
        assert_eq!(host_bytes(8, EvictionSpec::Lru, scan, false), 8 * 24 + 1);
        assert_eq!(host_bytes(8, EvictionSpec::Lru, scan, true), 8 * 25 + 1);
        assert_eq!(host_bytes(8, EvictionSpec::Linux { reserve: 0.0, inactive_ratio: InactiveRatio::Kernel, workingset: true, look_twice: true }, Recency::Access, false), 8 * 23 + 1);
    }

    #[test]
    fn the_machines_of_a_workload_must_fit_the_host_together() {
        let os = |memory: u64| OsSpec { eviction: EvictionSpec::Lru, ..OsSpec::simple(memory, PlacementSpec::Sequential) };
        let (half, third) = (os(7 << 40), os(5 << 40));
        // 12 TiB of 4 KiB frames need 66.38 GiB; each memory alone (38.72, 27.66 GiB) fits 40 GiB.
        let e = fit_together([&half, &third].into_iter(), Some(40 << 30), "workload[1]").unwrap_err().to_string();
        assert!(e.starts_with("workload[1]: cannot allocate 66.38GiB of host memory for the 2 machines it runs on at once (12TiB of simulated memory in all; this process may use 40GiB)"), "{e}");
        let never_evicts = OsSpec::simple(12 << 40, PlacementSpec::Sequential);
        assert!(fit_together([&never_evicts, &never_evicts].into_iter(), Some(1 << 30), "w").is_ok(), "a bit per frame: 768 MiB");
        assert!(fit_together([&half, &third].into_iter(), Some(70 << 30), "w").is_ok());
        assert!(fit_together([&half, &third].into_iter(), None, "w").is_ok(), "no check where the host's memory is unknown");
        assert!(fit_together([&os(15 << 40)].into_iter(), Some(1 << 30), "w").is_ok(), "one machine is checked with its own field");
    }

    #[test]
    fn readahead_defaults_to_the_kernels_where_pages_are_swapped_through_the_swap_cache() {
        let cluster = |eviction: Option<EvictionKind>, swap_cache: Option<bool>| {
            let raw = RawOs { eviction, swap_cache, placement: Some(Placement::Random), ..presets::default_os() };
            validate(&raw, "os").unwrap().page_cluster
        };
        assert_eq!(cluster(Some(EvictionKind::Lru), None), DEFAULT_PAGE_CLUSTER);
        assert_eq!(cluster(Some(EvictionKind::Linux), Some(true)), DEFAULT_PAGE_CLUSTER);
        assert_eq!(cluster(Some(EvictionKind::Lru), Some(false)), 0, "no swap cache to read into");
        assert_eq!(cluster(None, None), 0, "nothing swapped");
        let raw = RawOs { eviction: Some(EvictionKind::Lru), page_cluster: Some(0), ..presets::default_os() };
        assert_eq!(validate(&raw, "os").unwrap().page_cluster, 0);
    }

    #[test]
    fn stores_copy_pages_out_of_the_swap_cache_by_default_where_there_is_one() {
        let cow = |eviction: Option<EvictionKind>, swap_cache: Option<bool>, given: Option<bool>| {
            let raw = RawOs { eviction, swap_cache, swap_cache_cow: given, ..presets::default_os() };
            validate(&raw, "os").map(|spec| spec.swap_cache_cow).map_err(|e| e.to_string())
        };
        assert_eq!(cow(Some(EvictionKind::Lru), None, None), Ok(true));
        assert_eq!(cow(Some(EvictionKind::Lru), Some(false), None), Ok(false));
        assert_eq!(cow(Some(EvictionKind::Lru), None, Some(false)), Ok(false));
        assert_eq!(cow(None, None, None), Ok(false));
        let e = cow(Some(EvictionKind::Lru), Some(false), Some(true)).unwrap_err();
        assert!(e.starts_with("os.swap_cache_cow: pages are copied out of the swap cache"), "{e}");
        let e = cow(None, None, Some(false)).unwrap_err();
        assert!(e.starts_with("os.swap_cache_cow: nothing is swapped"), "{e}");
    }

    #[test]
    fn eviction_errors_spell_policies_as_files_do() {
        let raw = RawOs { eviction: Some(EvictionKind::HorizonLru), ..presets::default_os() };
        let e = validate(&raw, "os").unwrap_err().to_string();
        assert!(e.contains("`horizon-lru` eviction needs iceberg placement"), "{e}");
    }
}
