//! Writing results: `results.csv` (one row per workload × machine × TLB level) and
//! `results.json` (the resolved configuration, xlat version, input identities, seed and every
//! statistic). Each file is written to a temporary file in the output directory and renamed
//! into place, so an interrupted or failed write never leaves a half-written result.

use super::experiment::ExperimentResult;
use crate::config::ExperimentSpec;
use crate::atomic::write_atomically;
use crate::{Error, Result};
use std::io::Write;
use std::path::Path;

/// Writes both result files into `dir` (created if missing).
pub fn write_results(dir: &Path, spec: &ExperimentSpec, result: &ExperimentResult) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    write_atomically(&dir.join("results.csv"), |out| {
        let mut w = csv::Writer::from_writer(out);
        for row in result.rows() {
            w.serialize(row).map_err(std::io::Error::other)?;
        }
        w.flush()
    })?;
    let json = serde_json::json!({
        "xlat_version": crate::VERSION,
        "seed": spec.seed,
        "partial": result.partial,
        "experiment": spec,
        "results": result.workloads,
    });
    write_atomically(&dir.join("results.json"), |out| {
        serde_json::to_writer_pretty(&mut *out, &json)?;
        out.write_all(b"\n")
    })
}
