//! The `xlat` command-line tool: run experiments, inspect and convert traces, benchmark.
//!
//! Exit codes: 0 success; 1 error (bad input, bad configuration, simulation failure);
//! 2 usage error (unknown flag or subcommand, a flag value it does not take, a `--set` value
//! the workload rejects); 130 interrupted by Ctrl-C, SIGTERM or SIGHUP (partial results,
//! flagged `partial`, were written, unless the message says none were: a second interrupt
//! exits at once); killed by SIGPIPE when standard output's reader is gone.

// The workspace forbids printing from library code; printing is this binary's job.
#![allow(clippy::print_stdout)]

/// `print!` that returns the error instead of panicking when standard output cannot be
/// written (a full disk), so that it ends as a clear message and exit code 1.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout(), $($arg)*).map_err($crate::stdout_error)
    }};
}

/// `println!` that returns the error instead of panicking (see `out!`).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout(), $($arg)*).map_err($crate::stdout_error)
    }};
}

/// Names standard output in an error writing to it.
fn stdout_error(e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("writing to standard output: {e}"))
}

mod commands;
mod plot;
mod progress;
mod record;
mod report;

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// xlat: a fast simulator of virtual-memory address translation.
#[derive(Parser)]
#[command(version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an experiment (workloads × machines); without a file, the built-in default.
    Run(commands::run::RunArgs),
    /// Inspect and convert trace files.
    #[command(subcommand)]
    Trace(commands::trace::TraceCommand),
    /// Measure simulation speed on fixed configurations.
    Bench(commands::bench::BenchArgs),
    /// Hash functions of hashed physical memory: export test vectors for the hardware model.
    #[command(subcommand)]
    Hash(commands::hash::HashCommand),
    /// Redraw an experiment's plots from results already written.
    Plot(commands::plot::PlotArgs),
    /// List the built-in machines, or print one as TOML to start a configuration from.
    Presets(commands::presets::PresetsArgs),
    /// Print the JSON Schema of experiment files (for editors; docs/experiment.schema.json).
    Schema(commands::schema::SchemaArgs),
    /// Built-in workloads (GUPS, BTree, XSBench, Graph500, GAP, Memcached, Redis, sysbench memory): list,
    /// describe, check.
    #[command(subcommand)]
    Workload(commands::workload::WorkloadCommand),
}

/// What a command reports back to `main`.
pub enum Outcome {
    /// Finished normally.
    Done,
    /// Stopped by Ctrl-C after writing partial results.
    Interrupted,
    /// `trace record`: the recorded program failed (a non-zero exit status or a fatal
    /// signal); the trace is complete.
    ProgramFailed,
}

fn main() -> ExitCode {
    die_quietly_on_closed_stdout();
    let cli = Cli::parse();
    let interrupt = Arc::new(AtomicBool::new(false));
    // A benchmark cut short would measure something else: bench finishes the one it is in.
    // Commands that never look at the flag (short computations) stop at once instead.
    let stopping = match &cli.command {
        Command::Bench(_) => Some("the current benchmark"),
        Command::Run(_) | Command::Trace(_) | Command::Workload(commands::workload::WorkloadCommand::Check(_)) => Some("the current batch"),
        _ => None,
    };
    install_interrupt_handler(Arc::clone(&interrupt), stopping);
    let result = match cli.command {
        Command::Run(args) => commands::run::run(&args, &interrupt),
        Command::Trace(cmd) => commands::trace::run(&cmd, &interrupt),
        Command::Bench(args) => commands::bench::run(&args, &interrupt),
        Command::Presets(args) => commands::presets::run(&args),
        Command::Schema(args) => commands::schema::run(&args),
        Command::Hash(cmd) => commands::hash::run(&cmd),
        Command::Plot(args) => commands::plot::run(&args),
        Command::Workload(cmd) => commands::workload::run(&cmd, &interrupt),
    };
    match result {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::Interrupted) => ExitCode::from(130),
        Ok(Outcome::ProgramFailed) => ExitCode::from(3),
        Err(e) if matches!(e.downcast_ref::<xlat::Error>(), Some(xlat::Error::Interrupted)) => {
            eprintln!("interrupted: nothing was written");
            ExitCode::from(130)
        }
        Err(e) => {
            eprintln!("error: {}", message(&e));
            if e.downcast_ref::<commands::UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// The error with every cause, each once: a context (`drawing a.png`) says where and its
/// causes say why, but the engine's errors already end with their cause (`FILE: No such file
/// or directory`), which anyhow's alternate form would print twice.
fn message(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !text.ends_with(&cause) {
            text = format!("{text}: {cause}");
        }
    }
    text
}

/// A second interrupt this soon after the first is the same request, not a second one:
/// `timeout -s INT` signals xlat and then its process group, which holds xlat too.
const SAME_INTERRUPT: Duration = Duration::from_secs(1);

/// The first Ctrl-C (or SIGTERM, or SIGHUP: the `termination` feature of ctrlc) asks the
/// command to stop after `stopping` (`run` then writes partial
/// results, `bench` prints what it measured; trace commands write nothing). Another one
/// within [`SAME_INTERRUPT`] is ignored; a later one exits at once, writing nothing. A command
/// that does not stop when asked (`stopping` is `None`) exits at the first.
fn install_interrupt_handler(flag: Arc<AtomicBool>, stopping: Option<&'static str>) {
    keep_sighup_ignored_under_nohup();
    let mut first: Option<Instant> = None;
    let _ = ctrlc::set_handler(move || match (first, stopping) {
        (None, Some(stopping)) => {
            first = Some(Instant::now());
            flag.store(true, Ordering::SeqCst);
            eprintln!("\ninterrupted: stopping after {stopping} (interrupt again, a second or more later, to exit at once without writing results)");
        }
        (None, None) => exit_at_once("interrupted: exiting at once; outputs not complete were not written"),
        (Some(at), _) if at.elapsed() < SAME_INTERRUPT => {}
        (Some(_), _) => exit_at_once("interrupted again: exiting at once; no results were written"),
    });
}

/// Removes the temporary files of outputs being written and the scratch directories, and
/// exits with code 130.
fn exit_at_once(message: &str) -> ! {
    eprintln!("\n{message}");
    xlat::atomic::remove_temporaries();
    std::process::exit(130);
}

/// The handler catches SIGHUP too, replacing the SIG_IGN that `nohup` sets: closing the
/// terminal would then stop a run meant to outlive it. Blocking SIGHUP keeps it from the
/// handler as ignoring it did, and, unlike restoring SIG_IGN, needs no unsafe code; done
/// before any other thread exists, it holds for every thread, which inherit the mask.
fn keep_sighup_ignored_under_nohup() {
    use nix::sys::signal::{SigSet, Signal};
    if ignored_at_start(Signal::SIGHUP) {
        let mut set = SigSet::empty();
        set.add(Signal::SIGHUP);
        // Should it fail, SIGHUP stops the command as SIGINT does: cleanly.
        let _ = set.thread_block();
    }
}

/// True when `signal` is ignored, read from the `SigIgn` mask of /proc/self/status (Linux;
/// elsewhere false): asking sigaction would take unsafe code.
fn ignored_at_start(signal: nix::sys::signal::Signal) -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    let mask = status.lines().find_map(|l| l.strip_prefix("SigIgn:")).and_then(|m| u64::from_str_radix(m.trim(), 16).ok());
    mask.is_some_and(|m| (m >> (signal as u32 - 1)) & 1 == 1)
}

/// Restores the default action of SIGPIPE, which Rust's runtime ignores: a command whose
/// output is piped into `head` then ends quietly when `head` exits, as Unix tools do,
/// instead of panicking on its next print.
fn die_quietly_on_closed_stdout() {
    use nix::sys::signal::{signal, SigHandler, Signal};
    // SAFETY: called first thing in main, before any other thread exists, and installs the
    // default action, not a handler, so no handler code can run in an unsafe context.
    #[allow(unsafe_code)]
    let restored = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
    // Without it, a closed pipe is still an error message rather than a wrong answer.
    let _ = restored;
}
