//! Validation of the page walker's walk caches (`[machine.pwc]`).

use super::raw::RawPwc;
use super::validate::err;
use crate::mmu::pwc::{PwcSpec, MAX_LEVELS};
use crate::mmu::PageTableSpec;
use crate::os::OsSpec;
use crate::Result;

/// Entries of one level's cache at most: walk caches are a few dozen entries; this bounds
/// what a typo can ask of the host.
const MAX_ENTRIES: usize = 1 << 16;

/// Validates `raw` for a machine whose OS is `os`; errors name the field under `path`.
pub fn validate(raw: &RawPwc, os: &OsSpec, path: &str) -> Result<PwcSpec> {
    let levels = match os.page_table {
        PageTableSpec::Radix(radix) => usize::from(radix.levels),
        // FPT's entries are cached at the radix levels they resolve, of 4-level tables.
        PageTableSpec::Fpt(_) => 4,
        PageTableSpec::Ecpt(_) => return err(path, "ECPT has no page walk cache: its walk caches are `os.page_table.pud_cwc` and `pmd_cwc`"),
        PageTableSpec::Map(_) => return err(path, "walk caches serve walks that read tables: set `os.page_table` to a driver that keeps them (`radix` or `fpt`)"),
    };
    let d = PwcSpec::default();
    let spec = PwcSpec { entries: raw.entries.clone().unwrap_or(d.entries), ways: raw.ways.clone().unwrap_or(d.ways), policy: raw.replacement.unwrap_or(d.policy) };
    let cached = spec.entries.len();
    if cached == 0 || cached > (levels - 1).min(MAX_LEVELS) {
        return err(format!("{path}.entries"), format!("{cached} levels of walk cache: {levels}-level tables have 1 to {} levels above the PT to cache", levels - 1));
    }
    if spec.ways.len() != cached {
        return err(format!("{path}.ways"), format!("{} ways for {cached} levels of `entries`", spec.ways.len()));
    }
    for (i, (&entries, &ways)) in spec.entries.iter().zip(&spec.ways).enumerate() {
        if entries == 0 || entries > MAX_ENTRIES {
            return err(format!("{path}.entries[{i}]"), format!("{entries} entries: a walk cache has 1 to {MAX_ENTRIES}"));
        }
        if ways == 0 || entries % ways != 0 {
            return err(format!("{path}.ways[{i}]"), format!("{ways} ways do not divide {entries} entries"));
        }
    }
    Ok(spec)
}
