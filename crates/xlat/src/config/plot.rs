//! Plots an experiment draws from its own results: which table, which columns on which axes,
//! one line or bar group per value of a series column, one panel per value of another.
//! The CLI renders them as PNG files next to the results.

use super::validate::err;
use crate::Result;
use serde::{Deserialize, Serialize};

/// The columns of `results.csv` a plot may use: all of them, in the file's order.
pub const RESULT_COLUMNS: [&str; 30] = [
    "workload", "config", "level", "side", "tlb", "entries", "ways", "arity", "accesses", "hits", "misses",
    "sub_page_misses", "miss_rate", "mpki", "refs", "instructions", "walks", "page_faults", "footprint_bytes",
    "memory_bytes", "swap_io_bytes", "swap_ins", "swap_outs", "evictions", "shootdowns", "kernel_instructions", "conflicts", "first_conflict_utilization",
    "steady_state_utilization", "partial",
];

/// The columns of `eviction_age.csv`.
pub const AGE_COLUMNS: [&str; 5] = ["workload", "config", "window", "mean_age", "max_age"];

/// The columns of `timing.csv`.
pub const TIMING_COLUMNS: [&str; 12] = [
    "workload", "config", "walks", "mean_walk_cycles", "walk_cycles", "tlb_cycles", "data_cycles", "instruction_cycles", "total_cycles",
    "kernel_cycles", "cycles_with_kernel", "ipc",
];

/// The columns of `gpu.csv` ([`crate::gpu::mix::GpuRow`]).
pub const GPU_COLUMNS: [&str; 26] = [
    "workload", "config", "manager", "apps", "app_index", "app", "sms", "instructions", "requests", "cycles", "ipc", "alone_ipc", "speedup",
    "weighted_speedup", "total_ipc", "l1_tlb_hit_rate", "l2_tlb_hit_rate", "walks", "merged", "far_faults", "coalesced", "splintered", "compactions",
    "pages_migrated", "bloat", "partial",
];

/// The columns of either table that hold text, not numbers: they can name bar groups, series
/// and panels, but not be drawn as values or as a line's x.
const TEXT_COLUMNS: [&str; 8] = ["workload", "config", "level", "side", "tlb", "partial", "manager", "app"];

/// How the data is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PlotKind {
    /// A line per series over a numeric x.
    Lines,
    /// A group of bars per x value (categorical), one bar per series and y column.
    Bars,
}

/// Which result table a plot reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PlotData {
    /// `results.csv`.
    Results,
    /// `eviction_age.csv` (machines with `os.age_window`).
    EvictionAge,
    /// `timing.csv` (machines with `[machine.timing]`).
    Timing,
    /// `gpu.csv` (`gpu` machines running `gpu` workloads).
    Gpu,
}

impl PlotData {
    /// The file the table is written to.
    pub fn file(self) -> &'static str {
        match self {
            PlotData::Results => "results.csv",
            PlotData::EvictionAge => "eviction_age.csv",
            PlotData::Timing => "timing.csv",
            PlotData::Gpu => "gpu.csv",
        }
    }
}

/// A text column's values cut into parts, each a column of its own: a machine named
/// `graph500-101%-horizon` holds a workload, a ratio and a policy, which a figure groups and
/// colours by separately.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSplit {
    /// The text column split (e.g. `config`).
    pub column: String,
    /// The names of its `-`-separated parts, in order; the last part keeps the rest of the
    /// value, dashes and all. An empty name leaves its part out.
    pub into: Vec<String>,
}

/// A plot as written.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPlot {
    /// Output file name (PNG), in the results directory.
    pub file: String,
    /// Title.
    pub title: Option<String>,
    /// `lines` or `bars`.
    pub kind: PlotKind,
    /// `results` (default), `eviction-age` or `timing`.
    pub data: Option<PlotData>,
    /// Column on the x axis.
    pub x: String,
    /// Column(s) on the y axis.
    pub y: Vec<String>,
    /// Column whose values are the lines or bars.
    pub series: Option<String>,
    /// Column whose values are separate panels.
    pub panels: Option<String>,
    /// Splits a text column's values at `-` into named parts that `x`, `series`, `panels`
    /// and `only` may use as columns, as `{ column = "config", into = ["", "ratio", "policy"] }`.
    pub split: Option<RawSplit>,
    /// Only rows whose `column` equals `value`, as `{ column = value }` pairs.
    pub only: Option<std::collections::BTreeMap<String, String>>,
    /// Logarithmic (base 2) x axis.
    pub x_log2: Option<bool>,
    /// Logarithmic (base 10) y axis.
    pub y_log: Option<bool>,
    /// The y axis's `[low, high]` (default: from the data). A list, not a pair, so that a
    /// list of another length is an error rather than cut to two.
    pub y_range: Option<Vec<f64>>,
    /// Axis labels (default: the column names).
    pub x_label: Option<String>,
    /// Y axis label.
    pub y_label: Option<String>,
}

/// A validated plot.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlotSpec {
    /// Output file name.
    pub file: String,
    /// Title.
    pub title: String,
    /// How it is drawn.
    pub kind: PlotKind,
    /// Which table it reads.
    pub data: PlotData,
    /// X column.
    pub x: String,
    /// Y columns.
    pub y: Vec<String>,
    /// Series column.
    pub series: Option<String>,
    /// Panel column.
    pub panels: Option<String>,
    /// The column split into parts, and the parts' names (empty for one left out).
    pub split: Option<RawSplit>,
    /// Row filters.
    pub only: Vec<(String, String)>,
    /// Log2 x axis.
    pub x_log2: bool,
    /// Log10 y axis.
    pub y_log: bool,
    /// Fixed y axis range.
    pub y_range: Option<(f64, f64)>,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
}

/// Validates one plot; errors name the field under `path`.
pub fn validate(raw: &RawPlot, path: &str) -> Result<PlotSpec> {
    if !raw.file.ends_with(".png") || raw.file.contains('/') {
        return err(format!("{path}.file"), format!("`{}` is not a PNG file name (no directories)", raw.file));
    }
    let data = raw.data.unwrap_or(PlotData::Results);
    let columns: &[&str] = match data {
        PlotData::Results => &RESULT_COLUMNS,
        PlotData::EvictionAge => &AGE_COLUMNS,
        PlotData::Timing => &TIMING_COLUMNS,
        PlotData::Gpu => &GPU_COLUMNS,
    };
    let parts = split_parts(raw, path, columns)?;
    let check = |field: &str, column: &str| {
        if columns.contains(&column) || parts.contains(&column) {
            Ok(())
        } else {
            err(format!("{path}.{field}"), format!("`{column}` is not a column of {} (columns: {})", data.file(), columns.join(", ")))
        }
    };
    let numeric = |field: &str, column: &str, what: &str| {
        if TEXT_COLUMNS.contains(&column) || parts.contains(&column) {
            err(format!("{path}.{field}"), format!("`{column}` holds text, but {what} needs numbers"))
        } else {
            Ok(())
        }
    };
    check("x", &raw.x)?;
    if raw.kind == PlotKind::Lines {
        numeric("x", &raw.x, "the x axis of a `lines` plot")?;
    }
    if raw.y.is_empty() {
        return err(format!("{path}.y"), "a plot needs at least one y column");
    }
    for y in &raw.y {
        check("y", y)?;
        numeric("y", y, "the y axis")?;
    }
    // Bars are drawn from 0 on a linear axis; a log axis would hide them or be ignored.
    if raw.kind == PlotKind::Bars {
        for (field, set) in [("x_log2", raw.x_log2), ("y_log", raw.y_log)] {
            if set == Some(true) {
                return err(format!("{path}.{field}"), "logarithmic axes apply to `lines` plots only".to_string());
            }
        }
    }
    for (field, column) in [("series", &raw.series), ("panels", &raw.panels)] {
        if let Some(c) = column {
            check(field, c)?;
        }
    }
    let y_range = match raw.y_range.as_deref() {
        None => None,
        Some(&[lo, hi]) => Some((lo, hi)),
        Some(other) => return err(format!("{path}.y_range"), format!("{} values given; the range is `[low, high]`", other.len())),
    };
    if let Some((lo, hi)) = y_range {
        if lo >= hi || lo.is_nan() || hi.is_nan() || (raw.y_log == Some(true) && lo <= 0.0) {
            return err(format!("{path}.y_range"), format!("[{lo}, {hi}] is not an increasing range (positive for a log axis)"));
        }
    }
    let only: Vec<(String, String)> = raw.only.clone().unwrap_or_default().into_iter().collect();
    for (column, _) in &only {
        check("only", column)?;
    }
    Ok(PlotSpec {
        file: raw.file.clone(),
        title: raw.title.clone().unwrap_or_else(|| raw.file.trim_end_matches(".png").to_string()),
        kind: raw.kind,
        data,
        x: raw.x.clone(),
        y: raw.y.clone(),
        series: raw.series.clone(),
        panels: raw.panels.clone(),
        split: raw.split.clone(),
        only,
        x_log2: raw.x_log2.unwrap_or(false),
        y_log: raw.y_log.unwrap_or(false),
        y_range,
        x_label: raw.x_label.clone().unwrap_or_else(|| raw.x.clone()),
        y_label: raw.y_label.clone().unwrap_or_else(|| raw.y.join(", ")),
    })
}

/// The names `split` gives its column's parts (none without `split`): each names a part
/// once, and no column of the table, which it would hide.
fn split_parts<'a>(raw: &'a RawPlot, path: &str, columns: &[&str]) -> Result<Vec<&'a str>> {
    let Some(split) = &raw.split else { return Ok(Vec::new()) };
    if !columns.contains(&split.column.as_str()) || !TEXT_COLUMNS.contains(&split.column.as_str()) {
        return err(format!("{path}.split.column"), format!("`{}` is not a text column of {}", split.column, raw.data.unwrap_or(PlotData::Results).file()));
    }
    let names: Vec<&str> = split.into.iter().map(String::as_str).filter(|n| !n.is_empty()).collect();
    if names.is_empty() {
        return err(format!("{path}.split.into"), "no part is named");
    }
    for (i, name) in names.iter().enumerate() {
        if columns.contains(name) || names[..i].contains(name) {
            return err(format!("{path}.split.into"), format!("`{name}` names a column already"));
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::{validate, RawPlot};

    /// A bar plot with `fields`, as written in an experiment file.
    fn plot(fields: &str) -> RawPlot {
        toml::from_str(&format!("file = \"a.png\"\nkind = \"bars\"\n{fields}\n")).unwrap()
    }

    #[test]
    fn split_parts_are_text_columns_of_their_own() {
        let split = "split = { column = \"config\", into = [\"\", \"ratio\", \"policy\"] }\n";
        let spec = validate(&plot(&format!("x = \"ratio\"\ny = [\"swap_io_bytes\"]\nseries = \"policy\"\nonly = {{ policy = \"lru\" }}\n{split}")), "plot[0]").unwrap();
        assert_eq!(spec.split.unwrap().into, ["", "ratio", "policy"]);
        // A part holds text: it names groups, not values.
        let e = validate(&plot(&format!("x = \"workload\"\ny = [\"ratio\"]\n{split}")), "plot[0]");
        assert!(e.unwrap_err().to_string().contains("`ratio` holds text"));
    }

    #[test]
    fn split_errors_name_the_field() {
        for (split, field, message) in [
            ("{ column = \"misses\", into = [\"a\"] }", "split.column", "`misses` is not a text column"),
            ("{ column = \"config\", into = [\"\"] }", "split.into", "no part is named"),
            ("{ column = \"config\", into = [\"a\", \"a\"] }", "split.into", "`a` names a column already"),
            ("{ column = \"config\", into = [\"tlb\"] }", "split.into", "`tlb` names a column already"),
        ] {
            let e = validate(&plot(&format!("x = \"workload\"\ny = [\"swap_io_bytes\"]\nsplit = {split}")), "plot[0]").unwrap_err().to_string();
            assert!(e.contains(&format!("plot[0].{field}")) && e.contains(message), "{split}: {e}");
        }
    }
}
