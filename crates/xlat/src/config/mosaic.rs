//! Validation of a machine's Mosaic TLBs, expanding listed arities and associativities into
//! one TLB per combination.

use super::raw::{RawMosaic, RawWays};
use super::validate::{check_name, err, MAX_ARRAY_ENTRIES};
use crate::sim::MosaicSpec;
use crate::tlb::mosaic::MosaicGeometry;
use crate::tlb::Policy;
use crate::Result;

/// Default entries of a Mosaic TLB (the paper's 1024).
pub const DEFAULT_ENTRIES: usize = 1024;
/// Default associativity.
pub const DEFAULT_WAYS: RawWays = RawWays::Count(4);
/// Default arity (the paper's Mosaic-4).
pub const DEFAULT_ARITY: u32 = 4;

/// The Mosaic TLBs of `list`, each error naming its field under `path`. Their names must
/// differ from each other and from the machine's `levels` (both key result rows).
pub fn validate(list: &[RawMosaic], path: &str, levels: &[&str]) -> Result<Vec<MosaicSpec>> {
    let mut out: Vec<MosaicSpec> = Vec::new();
    for (i, raw) in list.iter().enumerate() {
        let path = format!("{path}[{i}]");
        if let Some(name) = &raw.name {
            check_name(name, &format!("{path}.name"))?;
        }
        let entries = raw.entries.unwrap_or(DEFAULT_ENTRIES);
        // The same bound as conventional arrays: a mistyped size is an error, not an attempt
        // to allocate more host memory than there is.
        if entries > MAX_ARRAY_ENTRIES {
            return err(format!("{path}.entries"), format!("{entries} entries exceed the {MAX_ARRAY_ENTRIES} a TLB may have"));
        }
        let ways_list = raw.ways.as_ref().map_or(vec![DEFAULT_WAYS], |w| w.to_vec());
        let arities = raw.arity.as_ref().map_or(vec![DEFAULT_ARITY], |a| a.to_vec());
        if ways_list.is_empty() || arities.is_empty() {
            return err(path, "`ways` and `arity` lists must not be empty");
        }
        let several = ways_list.len() * arities.len() > 1;
        for &ways in &ways_list {
            for &arity in &arities {
                let geometry = MosaicGeometry {
                    entries,
                    ways: match ways {
                        RawWays::Count(w) => w,
                        RawWays::Full => entries,
                    },
                    policy: raw.replacement.unwrap_or(Policy::Lru),
                    arity,
                };
                geometry.check().map_err(|e| crate::Error::config(path.clone(), e))?;
                let name = name(raw.name.as_deref(), arity, ways, ways_list.len() > 1, several);
                if out.iter().any(|m| m.name == name) {
                    return err(format!("{path}.name"), format!("two Mosaic TLBs are named `{name}`"));
                }
                if levels.contains(&name.as_str()) {
                    return err(format!("{path}.name"), format!("`{name}` already names a TLB level of this machine"));
                }
                out.push(MosaicSpec { name, geometry });
            }
        }
    }
    Ok(out)
}

/// `mosaic-<arity>`, with the associativity when several are swept; a given name is used as
/// is for a single TLB and as a prefix for a sweep.
fn name(given: Option<&str>, arity: u32, ways: RawWays, ways_vary: bool, several: bool) -> String {
    let mut name = match given {
        Some(n) if !several => return n.to_string(),
        Some(n) => format!("{n}-{arity}"),
        None => format!("mosaic-{arity}"),
    };
    if ways_vary {
        match ways {
            RawWays::Count(w) => name.push_str(&format!("-{w}w")),
            RawWays::Full => name.push_str("-full"),
        }
    }
    name
}
