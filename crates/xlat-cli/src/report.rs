//! Human-readable tables of results for the terminal.

use std::fmt::Write;
use xlat::sim::{ExperimentResult, WorkloadResult};

/// Formats a count with thousands separators.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `v` with `decimals` decimals, or, when that would print a nonzero value as zero, in
/// scientific notation: a rare miss must not read as none.
fn fixed_or_small(v: f64, decimals: usize) -> String {
    if v != 0.0 && v.abs() < 0.5 * 10f64.powi(-(decimals as i32)) {
        format!("{v:.1e}")
    } else {
        format!("{v:.decimals$}")
    }
}

/// One table per workload: a row per machine, level and side; for a `gpu` workload, a row
/// per machine and application.
pub fn table(result: &ExperimentResult) -> String {
    let mut out = String::new();
    for w in &result.workloads {
        if !w.gpu.is_empty() {
            gpu_table(&mut out, w);
            continue;
        }
        let rate = w.refs as f64 / w.seconds.max(1e-9) / 1e6;
        let partial = if w.partial { "  (partial: interrupted)" } else { "" };
        let _ = writeln!(out, "workload {}: {} references in {:.2} s ({rate:.1} M refs/s over {} machines){partial}",
            w.workload, thousands(w.refs), w.seconds, w.machines.len());
        let _ = writeln!(out, "  {:<16} {:<10} {:<8} {:>14} {:>14} {:>9} {:>9}", "machine", "level", "side", "accesses", "misses", "miss %", "MPKI");
        // An instruction side that saw no fetch (a data-only trace) is noise in a table; the
        // CSV keeps every row.
        let rows = w.machines.iter().flat_map(|m| m.rows(&w.workload, w.partial));
        for row in rows.filter(|r| r.accesses > 0 || r.side != "instr") {
            let mpki = row.mpki.map_or("-".to_string(), |v| fixed_or_small(v, 2));
            let rate = row.miss_rate.map_or("-".to_string(), |v| fixed_or_small(100.0 * v, 3));
            let _ = writeln!(out, "  {:<16} {:<10} {:<8} {:>14} {:>14} {:>9} {:>9}",
                row.config, row.level, row.side, thousands(row.accesses), thousands(row.misses), rate, mpki);
        }
        // Per machine: its page size and memory decide faults and what stays resident.
        for m in &w.machines {
            // Under transparent huge pages, how many of the pages are 2 MiB ones.
            let huge = m.os.thp.map_or(String::new(), |t| format!(" ({} of them 2 MiB, {} collapsed by khugepaged)", thousands(t.huge_pages), thousands(t.collapses)));
            let _ = writeln!(out, "  {:<16} footprint {} touched, {} page faults, {} pages resident at the end{huge}",
                m.machine, xlat::units::format_bytes(m.os.footprint_bytes), thousands(m.os.page_faults), thousands(m.os.mapped_pages));
        }
        // Timed machines: where the cycles went (timing.csv has every column).
        for (m, t) in w.machines.iter().filter_map(|m| Some((m, m.timing.as_ref()?))) {
            let walk = t.mean_walk_cycles.map_or("-".to_string(), |c| format!("{c:.1}"));
            let ipc = t.ipc.map_or("-".to_string(), |v| format!("{v:.3}"));
            let _ = writeln!(out, "  {:<16} {} cycles, IPC {ipc}, {} walks of {walk} cycles on average, {} page-table frames",
                m.machine, thousands(t.total_cycles.round() as u64), thousands(t.walks), thousands(m.os.page_table_frames));
        }
        out.push('\n');
    }
    out
}

/// The table of a `gpu` workload: per machine its weighted speedup and TLB hit rates, and
/// per application its IPC in the mix and alone.
fn gpu_table(out: &mut String, w: &WorkloadResult) {
    let rate = w.refs as f64 / w.seconds.max(1e-9) / 1e6;
    let partial = if w.partial { "  (partial: interrupted)" } else { "" };
    let _ = writeln!(out, "workload {}: {} GPU requests in {:.2} s ({rate:.1} M requests/s over {} gpu machines, alone runs not counted){partial}",
        w.workload, thousands(w.refs), w.seconds, w.gpu.len());
    let _ = writeln!(out, "  {:<16} {:<10} {:>8} {:>8} {:>8} {:>12} {:>14}", "machine", "app", "IPC", "alone", "WS", "L1 TLB hit %", "L2 TLB hit %");
    for m in &w.gpu {
        for row in m.rows(&w.workload) {
            let alone = row.alone_ipc.map_or("-".to_string(), |v| format!("{v:.3}"));
            let ws = row.weighted_speedup.map_or("-".to_string(), |v| format!("{v:.3}"));
            let _ = writeln!(out, "  {:<16} {:<10} {:>8.3} {alone:>8} {ws:>8} {:>12.2} {:>14.2}",
                row.config, row.app, row.ipc, 100.0 * row.l1_tlb_hit_rate, 100.0 * row.l2_tlb_hit_rate);
        }
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::{fixed_or_small, thousands};

    #[test]
    fn separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn small_values_are_not_rounded_to_zero() {
        assert_eq!(fixed_or_small(0.0, 3), "0.000");
        assert_eq!(fixed_or_small(12.34567, 3), "12.346");
        assert_eq!(fixed_or_small(0.0005, 3), "0.001");
        assert_eq!(fixed_or_small(0.000_42, 3), "4.2e-4");
        assert_eq!(fixed_or_small(0.004, 2), "4.0e-3");
    }
}
