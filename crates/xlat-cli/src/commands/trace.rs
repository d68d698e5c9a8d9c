//! `xlat trace`: inspect and convert trace files.

use crate::Outcome;
use anyhow::Result;
use clap::Subcommand;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// Subcommands of `xlat trace`.
#[derive(Subcommand)]
pub enum TraceCommand {
    /// Summarize a trace: references, instructions, distinct pages, load/store/fetch mix.
    Info {
        /// The trace file (`-` for a Lackey trace on stdin).
        file: PathBuf,
    },
}

/// Runs a trace subcommand.
pub fn run(cmd: &TraceCommand, _interrupt: &AtomicBool) -> Result<Outcome> {
    match cmd {
        TraceCommand::Info { file } => anyhow::bail!("{}: trace info is not available yet", file.display()),
    }
}
