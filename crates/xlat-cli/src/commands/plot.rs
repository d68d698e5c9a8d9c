//! `xlat plot`: redraw an experiment's plots from results already written.

use crate::Outcome;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

/// Arguments of `xlat plot`.
#[derive(Args)]
pub struct PlotArgs {
    /// The experiment file whose `[[plot]]` tables to draw.
    experiment: PathBuf,
    /// The directory holding its results (as written by `xlat run --out`).
    #[arg(long)]
    dir: PathBuf,
}

/// Draws the plots.
pub fn run(args: &PlotArgs) -> Result<Outcome> {
    let spec = xlat::config::load_experiment(&args.experiment)?;
    if spec.plots.is_empty() {
        anyhow::bail!("{} has no [[plot]] tables", args.experiment.display());
    }
    crate::plot::draw_all(&args.dir, &spec.plots)?;
    eprintln!("drew {} plot(s) in {}", spec.plots.len(), args.dir.display());
    Ok(Outcome::Done)
}
