//! Validation of EMT's cycle model (`[machine.timing]`).

use super::raw::{RawCacheLevel, RawTiming};
use super::validate::err;
use crate::cache::CacheLevelSpec;
use crate::sim::machine::cpu::timing::TimingSpec;
use crate::Result;

/// Lines of one cache at most: 2^26 lines of 64 bytes are a 4 GiB cache; this bounds what a
/// typo can ask of the host.
const MAX_LINES: u64 = 1 << 26;

/// Validates `raw`; errors name the field under `path`.
pub fn validate(raw: &RawTiming, path: &str) -> Result<TimingSpec> {
    let d = TimingSpec::default();
    let line = raw.line.map_or(d.line, |l| l.0);
    if !(8..=4096).contains(&line) || !line.is_power_of_two() {
        return err(format!("{path}.line"), format!("a line of {line} bytes: a power of two from 8 to 4096"));
    }
    let caches = match &raw.caches {
        None => d.caches,
        Some(levels) => levels.iter().enumerate().map(|(i, l)| level(l, line, &format!("{path}.caches[{i}]"))).collect::<Result<Vec<_>>>()?,
    };
    if caches.is_empty() {
        return err(format!("{path}.caches"), "a timed machine needs at least one cache level");
    }
    for (i, c) in caches.iter().enumerate() {
        if caches[..i].iter().any(|other| other.name == c.name) {
            return err(format!("{path}.caches[{i}].name"), format!("another level is already called `{}`", c.name));
        }
    }
    let walk_level = match &raw.walk_level {
        None => 1.min(caches.len() - 1),
        Some(name) => match caches.iter().position(|c| &c.name == name) {
            Some(i) => i,
            None => return err(format!("{path}.walk_level"), format!("`{name}` names no cache level")),
        },
    };
    let cycles = |value: Option<f64>, default: f64, field: &str| match value {
        Some(v) if !(v.is_finite() && v >= 0.0) => err(format!("{path}.{field}"), format!("{v} cycles: a number of cycles is 0 or more")),
        v => Ok(v.unwrap_or(default)),
    };
    let data_parallelism = raw.data_parallelism.unwrap_or(d.data_parallelism);
    if !(data_parallelism.is_finite() && data_parallelism >= 1.0) {
        return err(format!("{path}.data_parallelism"), format!("{data_parallelism}: the memory-level parallelism is 1 or more"));
    }
    Ok(TimingSpec {
        caches,
        line,
        memory: raw.memory.unwrap_or(d.memory),
        walk_level,
        tlb: cycles(raw.tlb, d.tlb, "tlb")?,
        pwc: cycles(raw.pwc, d.pwc, "pwc")?,
        hash: cycles(raw.hash, d.hash, "hash")?,
        cwc: cycles(raw.cwc, d.cwc, "cwc")?,
        instruction: cycles(raw.instruction, d.instruction, "instruction")?,
        data_parallelism,
    })
}

/// One cache level of `line`-byte lines.
fn level(raw: &RawCacheLevel, line: u64, path: &str) -> Result<CacheLevelSpec> {
    super::validate::check_name(&raw.name, &format!("{path}.name"))?;
    let size = raw.size.0;
    let lines = size / line;
    if size == 0 || size % line != 0 || lines > MAX_LINES {
        return err(format!("{path}.size"), format!("{size} bytes are not 1 to {MAX_LINES} lines of {line} bytes"));
    }
    if raw.ways == 0 || lines % raw.ways as u64 != 0 {
        return err(format!("{path}.ways"), format!("{} ways do not divide the {lines} lines", raw.ways));
    }
    Ok(CacheLevelSpec { name: raw.name.clone(), size, ways: raw.ways, latency: raw.latency, split: raw.split.unwrap_or(false), policy: raw.replacement.unwrap_or(crate::tlb::Policy::Lru) })
}
