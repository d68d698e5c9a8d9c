//! Human-readable tables of results for the terminal.

use std::fmt::Write;
use xlat::sim::ExperimentResult;

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

/// One table per workload: a row per machine, level and side.
pub fn table(result: &ExperimentResult) -> String {
    let mut out = String::new();
    for w in &result.workloads {
        let rate = w.refs as f64 / w.seconds.max(1e-9) / 1e6;
        let partial = if w.partial { "  (partial: interrupted)" } else { "" };
        let _ = writeln!(out, "workload {}: {} references in {:.2} s ({rate:.1} M refs/s over {} machines){partial}",
            w.workload, thousands(w.refs), w.seconds, w.machines.len());
        let _ = writeln!(out, "  {:<16} {:<10} {:<8} {:>14} {:>14} {:>9} {:>9}", "machine", "level", "side", "accesses", "misses", "miss %", "MPKI");
        // An instruction side that saw no fetch (a data-only trace) is noise in a table; the
        // CSV keeps every row.
        let rows = w.machines.iter().flat_map(|m| m.rows(&w.workload, w.partial));
        for row in rows.filter(|r| r.accesses > 0 || r.side != "instr") {
            let mpki = row.mpki.map_or("-".to_string(), |v| format!("{v:.2}"));
            let rate = row.miss_rate.map_or("-".to_string(), |v| format!("{:.3}", 100.0 * v));
            let _ = writeln!(out, "  {:<16} {:<10} {:<8} {:>14} {:>14} {:>9} {:>9}",
                row.config, row.level, row.side, thousands(row.accesses), thousands(row.misses), rate, mpki);
        }
        // Per machine: its page size and memory decide faults and what stays resident.
        for m in &w.machines {
            let _ = writeln!(out, "  {:<16} footprint {} touched, {} page faults, {} pages resident at the end",
                m.machine, xlat::units::format_bytes(m.os.footprint_bytes), thousands(m.os.page_faults), thousands(m.os.mapped_pages));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::thousands;

    #[test]
    fn separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
