//! A model of the kernel's work on page tables (EMT's OS-side cost, seed 003): every
//! operation the OS model performs, counted in calls and in the primitives it does (entries
//! read and written, table pages allocated and zeroed, hashes, cuckoo kicks, cuckoo-walk-table
//! updates, TLB shootdowns), and an estimate of the kernel instructions they take from
//! per-primitive weights ([`KernelWorkSpec`], `os.kernel_work`).
//!
//! It is a model, not a measurement: the weights are estimates of a Linux kernel's
//! instructions per primitive (see `docs/configuration.md`), so absolute instruction counts
//! are rough; ratios between drivers on the same run (ECPT's faults against radix's) are
//! what compares with the paper's measured kernel work.
//!
//! Each primitive goes to the operation running when it is done ([`Meter::enter`]): a
//! fault's table allocations to the fault, the eviction a fault makes room with to
//! `swap_out`, an ECPT resize's new tables to `resize`, its gradual rehash to `rehash`.

use serde::{Deserialize, Serialize};
use std::ops::AddAssign;

/// An operation of the kernel whose work is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Work outside any operation (none is done there; a slot so that the meter always has
    /// an operation running).
    Idle,
    /// A fault mapping a page touched for the first time, or copied by a store.
    Fault,
    /// A fault mapping a page from swap, with the pages read ahead around it.
    SwapIn,
    /// Reclaim of one page: its entry swapped out and its TLB entries shot down.
    SwapOut,
    /// An accessed-bit scan: each resident page's entry read, cleared bits written.
    Scan,
    /// ECPT: placing a way's larger table.
    Resize,
    /// ECPT: one insertion's step of gradual rehashing.
    Rehash,
    /// khugepaged's scan of one 2 MiB range, and its collapse into a huge page.
    Collapse,
    /// A mapping made by an address-space event (mmap, brk growth): what it unmaps first.
    Map,
    /// An unmapping by an address-space event (munmap, brk shrink): the range's entries
    /// found and cleared, its frames and swap slots freed, its pages shot down.
    Unmap,
    /// A huge page split into base pages, as a partial unmap of it does.
    Split,
}

impl Operation {
    /// The operations reported, in order (not `Idle`).
    pub const REPORTED: [Operation; 10] = [
        Operation::Fault,
        Operation::SwapIn,
        Operation::SwapOut,
        Operation::Scan,
        Operation::Resize,
        Operation::Rehash,
        Operation::Collapse,
        Operation::Map,
        Operation::Unmap,
        Operation::Split,
    ];

    /// The name in `results.json`.
    pub fn name(self) -> &'static str {
        match self {
            Operation::Idle => "idle",
            Operation::Fault => "fault",
            Operation::SwapIn => "swap_in",
            Operation::SwapOut => "swap_out",
            Operation::Scan => "scan",
            Operation::Resize => "resize",
            Operation::Rehash => "rehash",
            Operation::Collapse => "collapse",
            Operation::Map => "map",
            Operation::Unmap => "unmap",
            Operation::Split => "split",
        }
    }
}

/// Counts of the primitives of page-table work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Primitives {
    /// Page-table entries read by software (the kernel finding an entry; not the MMU's walks).
    pub entries_read: u64,
    /// Page-table entries written (a PTE, a directory entry linking a new table, a cluster).
    pub entries_written: u64,
    /// Page-table pages (or FPT's 2 MiB blocks) allocated.
    pub table_allocations: u64,
    /// Page-table pages freed (tables an unmap emptied, `free_pgtables`).
    pub table_frees: u64,
    /// Bytes of page-table pages zeroed as they are allocated.
    pub table_bytes_zeroed: u64,
    /// Data frames allocated.
    pub frame_allocations: u64,
    /// Bytes of data pages zeroed (a first touch of anonymous memory).
    pub data_bytes_zeroed: u64,
    /// Bytes of data pages copied (khugepaged's collapse).
    pub data_bytes_copied: u64,
    /// Hashes computed (ECPT: one per way probed).
    pub hashes: u64,
    /// Cuckoo kicks (ECPT).
    pub kicks: u64,
    /// Cuckoo-walk-table entries updated (ECPT).
    pub cwt_updates: u64,
    /// Pages shot down from the TLBs.
    pub shootdowns: u64,
}

impl AddAssign for Primitives {
    fn add_assign(&mut self, o: Primitives) {
        self.entries_read += o.entries_read;
        self.entries_written += o.entries_written;
        self.table_allocations += o.table_allocations;
        self.table_frees += o.table_frees;
        self.table_bytes_zeroed += o.table_bytes_zeroed;
        self.frame_allocations += o.frame_allocations;
        self.data_bytes_zeroed += o.data_bytes_zeroed;
        self.data_bytes_copied += o.data_bytes_copied;
        self.hashes += o.hashes;
        self.kicks += o.kicks;
        self.cwt_updates += o.cwt_updates;
        self.shootdowns += o.shootdowns;
    }
}

/// Kernel instructions per call and per primitive (`os.kernel_work`): estimates for a Linux
/// kernel on x86-64, documented in `docs/configuration.md`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct KernelWorkSpec {
    /// Per operation call: exception entry and exit, the VMA lookup, locking.
    pub call: f64,
    /// Per page-table entry read by software.
    pub entry_read: f64,
    /// Per page-table entry written.
    pub entry_written: f64,
    /// Per page-table page allocated (the page allocator's fast path).
    pub table_allocation: f64,
    /// Per page-table page freed (the page allocator's free path, taken as its fast
    /// path's cost).
    pub table_free: f64,
    /// Per byte of page-table page zeroed.
    pub table_byte_zeroed: f64,
    /// Per data frame allocated.
    pub frame_allocation: f64,
    /// Per byte of data page zeroed.
    pub data_byte_zeroed: f64,
    /// Per byte of data page copied.
    pub data_byte_copied: f64,
    /// Per hash computed.
    pub hash: f64,
    /// Per cuckoo kick, beyond its hash, read and write.
    pub kick: f64,
    /// Per cuckoo-walk-table update.
    pub cwt_update: f64,
    /// Per page shot down.
    pub shootdown: f64,
}

impl Default for KernelWorkSpec {
    fn default() -> KernelWorkSpec {
        KernelWorkSpec {
            call: 500.0,
            entry_read: 4.0,
            entry_written: 6.0,
            table_allocation: 250.0,
            table_free: 250.0,
            table_byte_zeroed: 0.125,
            frame_allocation: 250.0,
            data_byte_zeroed: 0.125,
            data_byte_copied: 0.25,
            hash: 25.0,
            kick: 10.0,
            cwt_update: 30.0,
            shootdown: 150.0,
        }
    }
}

impl KernelWorkSpec {
    /// Checks that every weight is a finite number of instructions, not negative; errors
    /// name the field under `path`.
    pub fn check(&self, path: &str) -> crate::Result<()> {
        let fields = [
            ("call", self.call),
            ("entry_read", self.entry_read),
            ("entry_written", self.entry_written),
            ("table_allocation", self.table_allocation),
            ("table_free", self.table_free),
            ("table_byte_zeroed", self.table_byte_zeroed),
            ("frame_allocation", self.frame_allocation),
            ("data_byte_zeroed", self.data_byte_zeroed),
            ("data_byte_copied", self.data_byte_copied),
            ("hash", self.hash),
            ("kick", self.kick),
            ("cwt_update", self.cwt_update),
            ("shootdown", self.shootdown),
        ];
        match fields.iter().find(|(_, w)| !(w.is_finite() && *w >= 0.0)) {
            Some((field, w)) => Err(crate::Error::config(format!("{path}.{field}"), format!("{w}: a weight is a number of instructions, 0 or more"))),
            None => Ok(()),
        }
    }

    /// Instructions of `calls` calls doing `p`.
    pub fn instructions(&self, calls: u64, p: &Primitives) -> f64 {
        let n = |v: u64| v as f64;
        self.call * n(calls)
            + self.entry_read * n(p.entries_read)
            + self.entry_written * n(p.entries_written)
            + self.table_allocation * n(p.table_allocations)
            + self.table_free * n(p.table_frees)
            + self.table_byte_zeroed * n(p.table_bytes_zeroed)
            + self.frame_allocation * n(p.frame_allocations)
            + self.data_byte_zeroed * n(p.data_bytes_zeroed)
            + self.data_byte_copied * n(p.data_bytes_copied)
            + self.hash * n(p.hashes)
            + self.kick * n(p.kicks)
            + self.cwt_update * n(p.cwt_updates)
            + self.shootdown * n(p.shootdowns)
    }
}

/// What one operation did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct OpWork {
    calls: u64,
    work: Primitives,
}

/// Operations, `Idle` included.
const OPERATIONS: usize = Operation::REPORTED.len() + 1;

/// The running count: which operation is running, and what each did.
#[derive(Clone, Debug)]
pub struct Meter {
    running: Operation,
    ops: [OpWork; OPERATIONS],
}

impl Default for Meter {
    fn default() -> Meter {
        Meter { running: Operation::Idle, ops: [OpWork::default(); OPERATIONS] }
    }
}

impl Meter {
    /// Starts a call of `op`, which the primitives done until [`Meter::leave`] go to;
    /// returns the operation it interrupts, for `leave`.
    pub fn enter(&mut self, op: Operation) -> Operation {
        self.ops[op as usize].calls += 1;
        std::mem::replace(&mut self.running, op)
    }

    /// Ends the running call, resuming `outer` (what [`Meter::enter`] returned).
    pub fn leave(&mut self, outer: Operation) {
        self.running = outer;
    }

    /// The primitives of the running operation, to add to.
    #[inline]
    pub fn add(&mut self) -> &mut Primitives {
        &mut self.ops[self.running as usize].work
    }

    /// Counts a page-table allocation of `bytes`, zeroed.
    pub fn table_allocated(&mut self, bytes: u64) {
        let work = self.add();
        work.table_allocations += 1;
        work.table_bytes_zeroed += bytes;
    }

    /// The report, with instructions estimated by `weights`.
    pub fn stats(&self, weights: &KernelWorkSpec) -> KernelWorkStats {
        let mut total = Primitives::default();
        let mut calls = 0;
        let operations = Operation::REPORTED
            .iter()
            .map(|&op| {
                let OpWork { calls: c, work } = self.ops[op as usize];
                total += work;
                calls += c;
                OperationStats { operation: op.name(), calls: c, instructions: weights.instructions(c, &work), primitives: work }
            })
            .collect();
        KernelWorkStats { instructions: weights.instructions(calls, &total), calls, primitives: total, operations }
    }
}

/// What one operation did, as `results.json` shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OperationStats {
    /// The operation.
    pub operation: &'static str,
    /// Its calls.
    pub calls: u64,
    /// Estimated kernel instructions.
    pub instructions: f64,
    /// Its primitives.
    #[serde(flatten)]
    pub primitives: Primitives,
}

/// The kernel's page-table work over a run (`results.json`'s `kernel_work`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KernelWorkStats {
    /// Estimated kernel instructions of every operation.
    pub instructions: f64,
    /// Calls of every operation.
    pub calls: u64,
    /// Primitives of every operation.
    pub primitives: Primitives,
    /// Each operation's part.
    pub operations: Vec<OperationStats>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_goes_to_the_running_operation_and_adds_up() {
        let mut meter = Meter::default();
        let fault = meter.enter(Operation::Fault);
        meter.add().entries_written += 3;
        let evict = meter.enter(Operation::SwapOut);
        meter.add().shootdowns += 1;
        meter.leave(evict);
        meter.add().hashes += 2;
        meter.leave(fault);
        let weights = KernelWorkSpec::default();
        let s = meter.stats(&weights);
        let op = |name: &str| s.operations.iter().find(|o| o.operation == name).unwrap().clone();
        assert_eq!((op("fault").calls, op("fault").primitives.entries_written, op("fault").primitives.hashes), (1, 3, 2));
        assert_eq!((op("swap_out").calls, op("swap_out").primitives.shootdowns), (1, 1));
        assert_eq!((s.calls, s.primitives.entries_written, s.primitives.shootdowns), (2, 3, 1));
        let by_op: f64 = s.operations.iter().map(|o| o.instructions).sum();
        assert!((by_op - s.instructions).abs() < 1e-9 * s.instructions);
        assert_eq!(s.instructions, 2.0 * 500.0 + 3.0 * 6.0 + 150.0 + 2.0 * 25.0);
    }

    #[test]
    fn bad_weights_name_their_field() {
        let bad = KernelWorkSpec { hash: -1.0, ..KernelWorkSpec::default() };
        let e = bad.check("os.kernel_work").unwrap_err().to_string();
        assert!(e.contains("os.kernel_work.hash"), "{e}");
        assert!(KernelWorkSpec { kick: f64::NAN, ..KernelWorkSpec::default() }.check("k").is_err());
        assert!(KernelWorkSpec::default().check("k").is_ok());
    }
}
