//! `xlat run`: run an experiment file (or the built-in default) and write its results.

use crate::progress::Bar;
use crate::{report, Outcome};
use anyhow::Result;
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use xlat::config::{self, ExperimentSpec};
use xlat::sim::{check_outputs, run_experiment, write_results, ExperimentResult};

/// The built-in experiment run when no file is given.
pub const DEFAULT_EXPERIMENT: &str = include_str!("../../../../experiments/default.toml");

/// Arguments of `xlat run`.
#[derive(Args)]
pub struct RunArgs {
    /// Experiment file (TOML: `[[workload]]` and `[[machine]]` tables); the built-in default
    /// experiment when omitted.
    experiment: Option<PathBuf>,
    /// Directory for results.csv and results.json (written atomically); nothing is written
    /// when omitted.
    #[arg(long, short)]
    out: Option<PathBuf>,
    /// Print no table and no progress bar.
    #[arg(long, short)]
    quiet: bool,
}

/// Loads the experiment named by `path`, or the built-in default.
fn load(path: Option<&Path>) -> Result<ExperimentSpec> {
    Ok(match path {
        Some(p) => config::load_experiment(p)?,
        None => config::parse_experiment(DEFAULT_EXPERIMENT, Path::new("."))
            .map_err(|e| anyhow::anyhow!("built-in experiment: {e}"))?,
    })
}

/// Runs the experiment, writes results, prints a table.
pub fn run(args: &RunArgs, interrupt: &AtomicBool) -> Result<Outcome> {
    let spec = load(args.experiment.as_deref())?;
    if let Some(dir) = &args.out {
        // Before the run, which may take hours, rather than after it, and every file: one
        // failing after others were written would leave a mix of new and old results.
        check_outputs(dir, &spec)?;
    }
    if !args.quiet && args.experiment.is_none() {
        eprintln!("running the built-in default experiment (see `xlat run --help` to run your own)");
    }
    let mut bar = Bar::new(!args.quiet);
    let result = run_experiment(&spec, interrupt, &mut |p| bar.update(p))?;
    // Results are written before the table is printed: printing ends the process when
    // standard output's reader is gone (`xlat run | head`), and the files must not depend on
    // who reads the table. A failed write still prints the table, then reports the error.
    let written = args.out.as_deref().map_or(Ok(()), |dir| write_all(dir, &spec, &result));
    if !args.quiet {
        out!("{}", report::table(&result))?;
    }
    written?;
    if let Some(dir) = &args.out {
        if !args.quiet {
            eprintln!("results written to {}", dir.display());
        }
    }
    Ok(if result.partial { Outcome::Interrupted } else { Outcome::Done })
}

/// Writes the result files into `dir`, then draws the plots. A plot that partial results
/// cannot give (its workload was not reached) is a warning, not an error: the run still ends
/// as interrupted, with exit code 130 (an earlier run's drawing of it is removed, as for any
/// plot not drawn).
fn write_all(dir: &Path, spec: &ExperimentSpec, result: &ExperimentResult) -> Result<()> {
    write_results(dir, spec, result)?;
    if !result.partial {
        return crate::plot::draw_all(dir, &spec.plots);
    }
    for e in crate::plot::draw_those_possible(dir, &spec.plots)? {
        eprintln!("warning: {} (not drawn from these partial results)", crate::message(&e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_experiment_is_valid() {
        let spec = load(None).unwrap();
        assert!(!spec.workloads.is_empty() && !spec.machines.is_empty());
    }
}
