//! `xlat trace`: inspect and convert trace files.

use crate::Outcome;
use anyhow::{anyhow, Result};
use clap::Subcommand;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use xlat::source::background::ReadAhead;
use xlat::source::RefSource;
use xlat::trace::{self, TraceFormat};

/// Subcommands of `xlat trace`.
#[derive(Subcommand)]
pub enum TraceCommand {
    /// Summarize a trace: references, instructions, distinct pages, load/store/fetch mix, and
    /// a native trace's header metadata.
    Info {
        /// The trace file (`-` reads Lackey text from stdin).
        file: PathBuf,
        /// The format (`native`, `lackey`, `champsim`); detected from the content when omitted.
        #[arg(long, value_parser = format_arg)]
        format: Option<TraceFormat>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Convert a trace to another format.
    Convert {
        /// The input trace (`-` reads Lackey text from stdin).
        input: PathBuf,
        /// The output file, written atomically (complete or not at all), so not `-` (stdout).
        output: PathBuf,
        /// Input format; detected when omitted.
        #[arg(long, value_parser = format_arg)]
        from: Option<TraceFormat>,
        /// Output format; taken from the output's extension when omitted (`.xlat` native;
        /// `.lackey`, `.txt` or `.log` Lackey; `.champsim` or `.champsimtrace` ChampSim, also
        /// compressed with `.xz`, `.gz` or `.zst`). Native traces are compressed inside:
        /// `.xlat.zst`, `.xlat.gz` and `.xlat.xz` are refused.
        #[arg(long, value_parser = format_arg)]
        to: Option<TraceFormat>,
        /// Write ChampSim even where it cannot hold the stream exactly: sizes are dropped (each
        /// reference then translates only the page of its first byte), loads are recorded
        /// before stores, and wide instructions continue in extra records.
        #[arg(long)]
        lossy: bool,
    },
    /// Record the memory references of an x86-64 program into a native trace (runs it under
    /// Valgrind with a small recording tool, built on first use; see docs/recording.md).
    Record(crate::record::RecordArgs),
}

/// Parses a format flag's value, so that a bad one is a usage error (exit code 2).
fn format_arg(name: &str) -> Result<TraceFormat, String> {
    TraceFormat::from_name(name).ok_or_else(|| "unknown format (native, lackey, champsim)".to_string())
}

/// Runs a trace subcommand.
pub fn run(cmd: &TraceCommand, interrupt: &AtomicBool) -> Result<Outcome> {
    match cmd {
        TraceCommand::Info { file, format, json } => {
            // Opened and read on a helper thread, so that an interrupt stops the command even
            // while the input blocks (a FIFO nobody writes to).
            let (_, opened) = trace::open_interruptibly(file, *format, interrupt)?;
            let mut source = ReadAhead::new(opened, trace::info::BATCH, interrupt);
            let info = trace::info(&mut source)?;
            // Native traces carry a header (program, arguments, how it was made) worth seeing.
            let identity = source.identity();
            let metadata = identity.get("metadata").filter(|m| !m.is_null());
            if *json {
                let mut out = serde_json::to_value(&info)?;
                if let Some(m) = metadata {
                    out["metadata"] = m.clone();
                }
                outln!("{}", serde_json::to_string_pretty(&out)?)?;
            } else {
                outln!("{}: {}", file.display(), identity["format"].as_str().unwrap_or("trace"))?;
                out!("{info}")?;
                if let Some(m) = metadata {
                    outln!("metadata:        {m}")?;
                }
            }
        }
        TraceCommand::Convert { input, output, from, to, lossy } => {
            xlat::atomic::check_output(output)?;
            let out_format = match *to {
                Some(f) => f,
                None => TraceFormat::from_extension(output).ok_or_else(|| {
                    anyhow!("{}: cannot tell the output format from the extension; use --to", output.display())
                })?,
            };
            let done = trace::convert_with(input, *from, output, out_format, *lossy, interrupt)?;
            eprintln!("{} references written to {} ({out_format})", done.references, output.display());
            if done.events_dropped > 0 {
                eprintln!("note: {} address-space events left out ({out_format} traces cannot hold them)", done.events_dropped);
            }
        }
        TraceCommand::Record(args) => return crate::record::run(args, interrupt),
    }
    Ok(Outcome::Done)
}
