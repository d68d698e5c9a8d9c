//! A multiprogrammed stream: several workloads, each in an address space of its own, taking
//! turns on one simulated core as a scheduler would run them.
//!
//! Parts run round robin, `quantum` references at a time, in the order they are listed; a
//! part that ends leaves the rotation and the mix ends with its last part. Every reference
//! of a part is tagged with the part's ASID, so that the TLBs and the OS tell the address
//! spaces apart (a switch flushes nothing: entries are ASID-tagged). A part whose source
//! gives its references several ASIDs (a native trace of several processes) is an error: one
//! ASID for all would merge their address spaces. Instruction counts are
//! kept only when every part counts them, as misses per kilo-instruction over a mix would
//! otherwise divide every part's misses by some parts' instructions.

use super::{RefSource, WorkloadSpec};
use crate::memref::{Batch, MemRef};
use crate::types::Asid;
use crate::{Error, Result};
use serde::Serialize;

/// One workload of a mix and the address space its references are tagged with.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MixPart {
    /// The workload (its own `skip` and `limit` apply to it alone).
    pub workload: WorkloadSpec,
    /// The ASID of every reference of the part, replacing the one its source gives.
    pub asid: Asid,
}

/// A part of a running mix.
struct Running {
    source: Box<dyn RefSource>,
    /// The ASID every reference of the part is given.
    asid: Asid,
    name: String,
    /// The ASID the source gave the part's first reference, once read.
    source_asid: Option<Asid>,
}

impl Running {
    /// Gives `refs`, just read from the part's source, the part's ASID. An error if the source
    /// gave them another ASID than its first reference's: a part is one address space.
    fn tag(&mut self, refs: &mut [MemRef]) -> Result<()> {
        for r in refs {
            let first = *self.source_asid.get_or_insert(r.asid);
            if r.asid != first {
                return Err(Error::Simulation(format!(
                    "mix part `{}`: its input has references of ASIDs {first} and {}, but a part is one address space (its ASID, {}, would merge them)",
                    self.name, r.asid, self.asid
                )));
            }
            r.asid = self.asid;
        }
        Ok(())
    }
}

/// A running mix.
pub struct Mix {
    /// The parts still running, in rotation order.
    parts: Vec<Running>,
    /// Every part's identity, in the listed order (for result files).
    identities: Vec<serde_json::Value>,
    quantum: u64,
    /// The part whose turn it is, and the references left in its turn.
    current: usize,
    left: u64,
    counts_instructions: bool,
}

impl Mix {
    /// Opens every part of a mix taking turns of `quantum` (≥ 1) references.
    pub fn open(parts: &[MixPart], quantum: u64) -> Result<Mix> {
        debug_assert!(quantum > 0, "validation rejects an empty turn");
        let opened = parts.iter().map(|p| Ok((p.workload.open()?, p.asid))).collect::<Result<Vec<_>>>()?;
        let names = parts.iter().map(|p| p.workload.name.as_str());
        Ok(Mix::new(opened, names, quantum))
    }

    /// A mix of the opened `parts` with their ASIDs, named `names`.
    fn new<'a>(parts: Vec<(Box<dyn RefSource>, Asid)>, names: impl Iterator<Item = &'a str>, quantum: u64) -> Mix {
        let counts_instructions = parts.iter().all(|(source, _)| source.counts_instructions());
        let parts: Vec<Running> = parts
            .into_iter()
            .zip(names)
            .map(|((source, asid), name)| Running { source, asid, name: name.to_string(), source_asid: None })
            .collect();
        let identities =
            parts.iter().map(|p| serde_json::json!({ "name": p.name, "asid": p.asid, "input": p.source.identity() })).collect();
        Mix { parts, identities, quantum, current: 0, left: quantum, counts_instructions }
    }

    /// Passes the turn to the next part (after the current one ended, when `ended`).
    fn next_turn(&mut self, ended: bool) {
        if ended {
            self.parts.remove(self.current);
        } else {
            self.current += 1;
        }
        if self.current >= self.parts.len() {
            self.current = 0;
        }
        self.left = self.quantum;
    }
}

impl RefSource for Mix {
    fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
        let (start, instructions) = (batch.refs.len(), batch.instructions);
        while batch.refs.len() - start < max && !self.parts.is_empty() {
            let want = (max - (batch.refs.len() - start)).min(usize::try_from(self.left).unwrap_or(usize::MAX));
            let part = &mut self.parts[self.current];
            let (from, events) = (batch.refs.len(), batch.events.len());
            let got = part.source.fill(batch, want)?;
            part.tag(&mut batch.refs[from..])?;
            // A part is one address space: its events are the part's too.
            for (_, event) in &mut batch.events[events..] {
                event.asid = part.asid;
            }
            self.left -= got as u64;
            if got == 0 || self.left == 0 {
                self.next_turn(got == 0);
            }
        }
        if !self.counts_instructions {
            batch.instructions = instructions;
        }
        Ok(batch.refs.len() - start)
    }

    fn identity(&self) -> serde_json::Value {
        serde_json::json!({ "kind": "mix", "quantum": self.quantum, "parts": self.identities })
    }

    fn len_hint(&self) -> Option<u64> {
        self.parts.iter().try_fold(0u64, |total, p| p.source.len_hint().map(|n| total.saturating_add(n)))
    }

    fn counts_instructions(&self) -> bool {
        self.counts_instructions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memref::MemRef;
    use crate::source::VecSource;
    use proptest::prelude::*;

    /// A source of `refs` that counts one instruction per reference.
    struct Counted(VecSource);

    impl RefSource for Counted {
        fn fill(&mut self, batch: &mut Batch, max: usize) -> Result<usize> {
            let got = self.0.fill(batch, max)?;
            batch.instructions += got as u64;
            Ok(got)
        }
        fn identity(&self) -> serde_json::Value {
            self.0.identity()
        }
        fn counts_instructions(&self) -> bool {
            true
        }
    }

    /// Part `p`'s `n` references, told apart by address.
    fn part_refs(p: usize, n: usize) -> Vec<MemRef> {
        (0..n).map(|i| MemRef::load(((p as u64) << 32) + 8 * i as u64, 8)).collect()
    }

    /// The mixed stream, computed the obvious way: turns in list order, `quantum` references
    /// each, parts dropping out as they end.
    fn expected(lens: &[usize], asids: &[Asid], quantum: usize) -> Vec<MemRef> {
        let mut next = vec![0; lens.len()];
        let mut out = Vec::new();
        while next.iter().zip(lens).any(|(n, len)| n < len) {
            for p in 0..lens.len() {
                let take = quantum.min(lens[p] - next[p]);
                for r in &part_refs(p, lens[p])[next[p]..next[p] + take] {
                    out.push(MemRef { asid: asids[p], ..*r });
                }
                next[p] += take;
            }
        }
        out
    }

    fn mix_of(lens: &[usize], asids: &[Asid], quantum: u64, counted: &[bool]) -> Mix {
        let parts = lens.iter().enumerate().map(|(p, &n)| {
            let source = VecSource::new(part_refs(p, n));
            let boxed: Box<dyn RefSource> = if counted[p] { Box::new(Counted(source)) } else { Box::new(source) };
            (boxed, asids[p])
        });
        let names: Vec<String> = (0..lens.len()).map(|p| format!("p{p}")).collect();
        Mix::new(parts.collect(), names.iter().map(String::as_str), quantum)
    }

    proptest! {
        /// Whatever the batch sizes asked for, the mix is the round robin of its parts, every
        /// reference in its part's address space.
        #[test]
        fn takes_turns_in_order(
            lens in prop::collection::vec(0usize..40, 1..5),
            quantum in 1u64..12,
            maxes in prop::collection::vec(1usize..30, 1..8),
        ) {
            let asids: Vec<Asid> = (0..lens.len() as u16).map(|p| 7 * p + 1).collect();
            let mut mix = mix_of(&lens, &asids, quantum, &vec![false; lens.len()]);
            prop_assert_eq!(mix.len_hint(), Some(lens.iter().sum::<usize>() as u64));
            let mut got = Vec::new();
            let mut batch = Batch::default();
            for round in 0.. {
                batch.clear();
                let max = maxes[round % maxes.len()];
                let n = mix.fill(&mut batch, max).unwrap();
                prop_assert!(n <= max && n == batch.len());
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&batch.refs);
            }
            prop_assert_eq!(got, expected(&lens, &asids, quantum as usize));
        }
    }

    #[test]
    fn counts_instructions_only_when_every_part_does() {
        let read = |counted: &[bool]| {
            let mut mix = mix_of(&[5, 3], &[0, 1], 2, counted);
            let (refs, instructions) = crate::source::collect(&mut mix).unwrap();
            (refs.len(), instructions, mix.counts_instructions())
        };
        assert_eq!(read(&[true, true]), (8, 8, true));
        assert_eq!(read(&[true, false]), (8, 0, false));
        assert_eq!(read(&[false, false]), (8, 0, false));
    }

    #[test]
    fn identity_names_each_part_with_its_asid() {
        let mix = mix_of(&[1, 1], &[4, 9], 10, &[false, false]);
        let id = mix.identity();
        assert_eq!((&id["kind"], &id["quantum"]), (&"mix".into(), &10.into()));
        assert_eq!((&id["parts"][1]["name"], &id["parts"][1]["asid"]), (&"p1".into(), &9.into()));
        assert_eq!(id["parts"][0]["input"]["kind"], "vec");
    }
}
