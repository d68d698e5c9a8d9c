//! `xlat trace record`: runs an unmodified x86-64 program under a small Valgrind tool and
//! writes its memory references, and the changes to its address space as events among them,
//! straight into a native trace (`docs/recording.md`).
//!
//! The tool ([`tool`]) sends 16-byte binary records through a pipe; a reader thread
//! ([`stream`]) encodes them with the native writer while the main thread watches the
//! program, Ctrl-C and the reference limit.

#[cfg(test)]
mod event_tests;
mod point;
mod stream;
mod tool;

use crate::progress::Bar;
use crate::Outcome;
use anyhow::{anyhow, bail, Result};
use clap::Args;
use nix::sys::personality::{self, Persona};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use point::Point;
use stream::{Received, Stop};
use xlat::sim::Progress;
use xlat::trace::{NativeWriter, TraceFormat};

/// Bytes kept free after the header's metadata for what is known only at the end (how the
/// recording stopped, exit status, counts).
const METADATA_ROOM: usize = 1024;

/// Arguments of `xlat trace record`.
#[derive(Args)]
pub struct RecordArgs {
    /// The trace to write (native format, written atomically); `PROGRAM.xlat` in the current
    /// directory when omitted.
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Record instruction fetches too (one per executed instruction), not only loads and
    /// stores.
    #[arg(long)]
    ifetch: bool,
    /// Stop after recording N references: the program is killed and the trace completed.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    limit: Option<u64>,
    /// Let the first N references pass unrecorded before recording starts (counted from the
    /// start point with `--start-at`).
    #[arg(long, value_name = "N", default_value_t = 0)]
    skip: u64,
    /// Start recording at the N-th entry (1 by default) of the program's function SYMBOL.
    #[arg(long, value_name = "SYMBOL[:N]", value_parser = Point::parse)]
    start_at: Option<Point>,
    /// Stop recording at the N-th entry (1 by default, counted from the program's start) of
    /// its function SYMBOL, if it comes after the start: the program is killed and the trace
    /// completed.
    #[arg(long, value_name = "SYMBOL[:N]", value_parser = Point::parse)]
    stop_at: Option<Point>,
    /// Exit with 0 when the program fails (a non-zero exit status or a fatal signal), as
    /// when it succeeds; without it such a recording exits with code 3 (the trace is kept
    /// either way).
    #[arg(long)]
    allow_failure: bool,
    /// Print no progress and no summary.
    #[arg(long, short)]
    quiet: bool,
    /// The program to record and its arguments, after `--`.
    #[arg(required = true, last = true, value_name = "PROGRAM [ARGS]")]
    command: Vec<OsString>,
}

/// The program to run, as given and as found.
struct Program {
    /// Path passed to Valgrind (found in PATH when the name has no `/`).
    path: PathBuf,
    /// Its arguments.
    args: Vec<OsString>,
    /// Identity stored in the trace header.
    identity: Value,
}

/// Records the program into a native trace.
pub fn run(args: &RecordArgs, interrupt: &AtomicBool) -> Result<Outcome> {
    let program = find_program(&args.command)?;
    let output = match &args.output {
        Some(o) => o.clone(),
        None => PathBuf::from(format!("{}.xlat", program.path.file_name().unwrap_or_default().to_string_lossy())),
    };
    // Recording writes the native format only; a name that says otherwise would mislead.
    if let Some(other) = TraceFormat::from_extension(&output).filter(|&f| f != TraceFormat::Native) {
        bail!("{}: recording writes a native trace, not {other}; name it with .xlat (or `xlat trace convert` it afterwards)", output.display());
    }
    // Before the tool is built (a minute on a cold cache) or anything runs: an output that
    // cannot take the trace (`/dev/full`, a directory) is then an error at once.
    xlat::atomic::check_output(&output)?;
    for (point, option) in [(&args.start_at, "--start-at"), (&args.stop_at, "--stop-at")] {
        if let Some(point) = point {
            point::check_symbol(&program.path, point, option)?;
        }
    }
    let tool = tool::prepare()?;
    let mut metadata = json!({
        "program": program.identity,
        "created_by": format!("xlat {} trace record", xlat::VERSION),
        "recorder": {
            "method": "valgrind tool xlat_record",
            "valgrind": tool.valgrind_version,
            "ifetch": args.ifetch,
            "skip": args.skip,
            "limit": args.limit,
            "start_at": args.start_at.as_ref().map(Point::to_string),
            "stop_at": args.stop_at.as_ref().map(Point::to_string),
        },
    });
    let writer = NativeWriter::create_with_room(&output, &metadata, METADATA_ROOM)?;
    let (read_end, write_end) = pipe_for_child()?;
    let mut command = valgrind_command(args, &tool, &program, write_end.as_raw_fd());
    let (child, aslr) = spawn_without_aslr(&mut command)?;
    // The child has its copy; ours would keep the pipe open after the child is gone.
    drop(write_end);
    metadata["recorder"]["aslr"] = json!(aslr);

    let progress = Arc::new(AtomicU64::new(0));
    let stop_child = Arc::new(AtomicBool::new(false));
    let reader = spawn_reader(read_end, writer, Arc::clone(&progress), Arc::clone(&stop_child));
    let mut bar = Bar::new(!args.quiet);
    bar.update(Progress::Start { workload: "record", expected: args.limit });
    let started = Instant::now();
    let watched = watch(child, &stop_child, interrupt, &progress, &mut bar);
    bar.update(Progress::Finish);
    let ended = Instant::now();
    let (writer, got) = reader.join().map_err(|_| anyhow!("the trace writer thread panicked"))?;
    let status = watched?;
    let got = got.map_err(|e| anyhow!("recording into {}: {e}", output.display()))?;
    let interrupted = ended_by_interrupt(got.stop, status, interrupt.load(Ordering::Relaxed));
    let recording_from = got.first_record.unwrap_or(ended).min(ended);
    let seconds = Seconds { skipping: (recording_from - started).as_secs_f64(), recording: (ended - recording_from).as_secs_f64() };
    let end = Ending { got, status, interrupted, seconds };
    finish(args, &program, &output, writer, metadata, &end)
}

/// `valgrind -q --tool=xlatrec` with the tool's options, then the program and its arguments.
fn valgrind_command(args: &RecordArgs, tool: &tool::Tool, program: &Program, fd: i32) -> Command {
    let mut command = Command::new("valgrind");
    command.env("VALGRIND_LIB", &tool.lib_dir).arg("-q").arg(format!("--tool={}", tool::TOOL_NAME));
    command.arg(format!("--xlat-fd={fd}")).arg(format!("--xlat-ifetch={}", if args.ifetch { "yes" } else { "no" }));
    command.arg(format!("--xlat-skip={}", args.skip)).arg(format!("--xlat-limit={}", args.limit.unwrap_or(0)));
    for (point, which) in [(&args.start_at, "start"), (&args.stop_at, "stop")] {
        if let Some(point) = point {
            command.args(point.tool_args(which));
        }
    }
    command.arg(&program.path).args(&program.args);
    command
}

/// What the reader thread hands back: the writer, to be finished, and what it received.
type ReaderResult = (NativeWriter, Result<Received>);

/// Starts the thread that encodes the tool's records into `writer`. It sets `stop_child` at
/// the limit or when the trace cannot be written: the program must not run on.
fn spawn_reader(
    read_end: OwnedFd,
    mut writer: NativeWriter,
    progress: Arc<AtomicU64>,
    stop_child: Arc<AtomicBool>,
) -> std::thread::JoinHandle<ReaderResult> {
    std::thread::spawn(move || {
        let got = stream::receive(&mut File::from(read_end), &mut |d| d.write_to(&mut writer), &progress);
        if got.as_ref().map_or(true, |g| matches!(g.stop, Some(Stop::Limit | Stop::Point))) {
            stop_child.store(true, Ordering::Relaxed);
        }
        (writer, got)
    })
}

/// Finds the program (in PATH when the name has no `/`) and describes it: paths, arguments,
/// size and an xxh64 hash of the executable, so a trace names exactly what was recorded.
fn find_program(command: &[OsString]) -> Result<Program> {
    let (name, args) =
        command.split_first().ok_or_else(|| anyhow!("no program given (xlat trace record -- PROGRAM ARGS)"))?;
    let path = which::which(name).map_err(|_| {
        anyhow!("{}: program not found (not an executable file, nor in PATH)", Path::new(name).display())
    })?;
    let resolved = std::fs::canonicalize(&path).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let mut file = File::open(&resolved).map_err(|e| anyhow!("{}: {e}", resolved.display()))?;
    let mut hash = xxhash_rust::xxh64::Xxh64::new(0);
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(|e| anyhow!("{}: {e}", resolved.display()))?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
        size += n as u64;
    }
    let cwd = std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default();
    let identity = json!({
        "command": name.to_string_lossy(),
        "path": resolved.display().to_string(),
        "args": args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>(),
        "size": size,
        "xxh64": format!("{:016x}", hash.digest()),
        "cwd": cwd,
    });
    Ok(Program { path, args: args.to_vec(), identity })
}

/// A pipe whose write end the child inherits (not close-on-exec); the read end stays ours.
fn pipe_for_child() -> Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
    let (read_end, write_end) = nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|e| anyhow!("creating a pipe: {e}"))?;
    fcntl(&write_end, FcntlArg::F_SETFD(FdFlag::empty())).map_err(|e| anyhow!("passing the pipe to valgrind: {e}"))?;
    Ok((read_end, write_end))
}

/// Spawns `command` with address-space randomization off (personality ADDR_NO_RANDOMIZE,
/// inherited by the child, as `setarch -R` does), so recordings are reproducible. Returns
/// the child and what became of randomization, for the metadata: some sandboxes refuse
/// the call, and the recording then goes ahead with a warning.
fn spawn_without_aslr(command: &mut Command) -> Result<(Child, String)> {
    let old = personality::get();
    let aslr = match old.and_then(|p| personality::set(p | Persona::ADDR_NO_RANDOMIZE)) {
        Ok(_) => "off".to_string(),
        Err(e) => {
            eprintln!(
                "warning: cannot turn address-space randomization off ({e}); addresses may differ between recordings"
            );
            format!("on (personality call refused: {e})")
        }
    };
    let spawned = command.spawn();
    if let Ok(p) = old {
        // Only the child needed it; xlat's own later mappings need not be predictable.
        let _ = personality::set(p);
    }
    let child = spawned.map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => anyhow!("valgrind is not installed; install it with: apt-get install valgrind"),
        _ => anyhow!("starting valgrind: {e}"),
    })?;
    Ok((child, aslr))
}

/// Waits for the program, polling so that Ctrl-C and the end of the stream are noticed:
/// Ctrl-C, a reached limit or a failed trace writer (`stop_child`) kill it. Returns its
/// exit status.
fn watch(
    mut child: Child,
    stop_child: &AtomicBool,
    interrupt: &AtomicBool,
    progress: &AtomicU64,
    bar: &mut Bar,
) -> Result<ExitStatus> {
    let mut killed = false;
    loop {
        let status = match child.try_wait() {
            Ok(status) => status,
            Err(e) => {
                // Killed, so that the reader thread sees the pipe close and can be joined.
                let _ = child.kill();
                return Err(anyhow!("waiting for valgrind: {e}"));
            }
        };
        if let Some(status) = status {
            return Ok(status);
        }
        if !killed && (interrupt.load(Ordering::Relaxed) || stop_child.load(Ordering::Relaxed)) {
            // SIGKILL: the program may ignore gentler signals, and the trace is already
            // complete up to what the tool sent.
            let _ = child.kill();
            killed = true;
        }
        bar.update(Progress::Advance { refs: progress.load(Ordering::Relaxed) });
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether a recording that ended with the tool's `stop` (none when the stream just ended)
/// and the program's `status` ended by Ctrl-C, given whether one came (`interrupt`): when
/// the stream was cut (xlat killed the program for it), or when the program exited of a
/// signal after it, as it does when a terminal's Ctrl-C reaches the whole process group. A
/// program that exited by itself first, a reached limit and an exec (after which nothing is
/// recorded) stay what they are.
fn ended_by_interrupt(stop: Option<Stop>, status: ExitStatus, interrupt: bool) -> bool {
    match stop {
        None => interrupt,
        Some(Stop::Exit) => interrupt && status.signal().is_some(),
        Some(Stop::Limit | Stop::Point | Stop::Exec) => false,
    }
}

/// How a recording ended, from both sides of the pipe.
struct Ending {
    got: Received,
    status: ExitStatus,
    interrupted: bool,
    seconds: Seconds,
}

/// Where a recording's time went: before the first record arrived (Valgrind starting, and
/// the skipped references), and from it to the end.
struct Seconds {
    skipping: f64,
    recording: f64,
}

impl Ending {
    /// The `stopped` field of the metadata, and whether the trace is cut short.
    fn stopped(&self) -> (&'static str, bool) {
        match (self.interrupted, self.got.stop) {
            (true, _) => ("interrupted", true),
            (false, Some(Stop::Limit)) => ("limit", false),
            (false, Some(Stop::Point)) => ("stop-at", false),
            (false, Some(Stop::Exec)) => ("exec", false),
            (false, Some(Stop::Exit)) => ("exit", false),
            // Killed from outside (SIGKILL gives Valgrind no chance to finish).
            (false, None) => ("killed", true),
        }
    }
}

/// "exited with status N" or "killed by signal N".
fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => status.to_string(),
    }
}

/// Completes the trace with the final metadata and reports on stderr.
fn finish(
    args: &RecordArgs,
    program: &Program,
    output: &Path,
    writer: NativeWriter,
    mut metadata: Value,
    end: &Ending,
) -> Result<Outcome> {
    let name = program.path.display();
    if end.got.references() == 0 && end.got.stop.is_none() && !end.interrupted {
        bail!("valgrind {} before {name} started (see its messages above); no trace was written", describe(end.status));
    }
    if let (Some(point), None, false) = (&args.start_at, end.got.start, end.interrupted) {
        bail!("--start-at {point}: {name} never reached it ({}, having entered `{}` fewer times); no trace was written", describe(end.status), point.name);
    }
    let (stopped, partial) = end.stopped();
    let [loads, stores, ifetches] = end.got.counts;
    let [maps, unmaps] = end.got.events;
    metadata["recording"] = json!({
        "stopped": stopped,
        "exit_status": (end.got.stop == Some(Stop::Exit)).then(|| describe(end.status)),
        "references": end.got.references(),
        "loads": loads,
        "stores": stores,
        "ifetches": ifetches,
        "maps": maps,
        "unmaps": unmaps,
        "instructions_executed": end.got.instructions,
        "region": region(args, end),
    });
    metadata["partial"] = json!(partial);
    writer.finish_with_metadata(&metadata)?;
    if !args.quiet {
        let skipped = args.skip + end.got.start.map_or(0, |s| s.references);
        eprintln!("{}", summary(skipped, end, &name.to_string(), output));
    }
    if let (Some(point), false) = (&args.stop_at, matches!(stopped, "stop-at" | "limit" | "interrupted")) {
        bail!("--stop-at {point}: {name} never reached it after the start ({}); the trace is complete up to there, in {}", describe(end.status), output.display());
    }
    match stopped {
        "interrupted" => eprintln!("interrupted: the trace holds the references recorded so far and is marked partial"),
        "killed" => eprintln!("warning: {name} was {} before Valgrind could finish; the trace is marked partial", describe(end.status)),
        "exec" => eprintln!("note: {name} called execve; recording stopped there (Valgrind does not follow exec: record the final program directly)"),
        _ => {}
    }
    let failed = stopped == "exit" && !end.status.success();
    Ok(match (end.interrupted, failed, args.allow_failure) {
        (true, _, _) => Outcome::Interrupted,
        (false, true, false) => {
            eprintln!("error: {name} {}; the trace is complete, its exit status in the header (--allow-failure exits with 0)", describe(end.status));
            Outcome::ProgramFailed
        }
        (false, true, true) => {
            eprintln!("note: {name} {} (kept in the trace metadata)", describe(end.status));
            Outcome::Done
        }
        (false, false, _) => Outcome::Done,
    })
}

/// What part of the run the trace holds, when a start or stop point was asked for: the
/// points, and the references and instructions before the start point (the `--skip`ped
/// references come after it).
fn region(args: &RecordArgs, end: &Ending) -> Option<Value> {
    if args.start_at.is_none() && args.stop_at.is_none() {
        return None;
    }
    let start = end.got.start.unwrap_or_default();
    Some(json!({
        "start": args.start_at.as_ref().map(Point::to_string),
        "stop": args.stop_at.as_ref().map(Point::to_string),
        "stop_reached": end.got.stop == Some(Stop::Point),
        "references_before_start": start.references,
        "instructions_before_start": start.instructions,
    }))
}

/// The summary line: what was recorded (references and address-space events), at what rate
/// over the time recording (from the first record on), and the skipped references apart
/// with the time they took (Valgrind's start-up included).
fn summary(skip: u64, end: &Ending, name: &str, output: &Path) -> String {
    let [loads, stores, ifetches] = end.got.counts;
    let [maps, unmaps] = end.got.events;
    let events = maps + unmaps;
    let refs = end.got.references();
    let Seconds { skipping, recording } = end.seconds;
    let rate = refs as f64 / recording.max(1e-9) / 1e6;
    let skipped = if skip > 0 { format!(", after skipping {skip} references in {skipping:.1} s") } else { String::new() };
    format!(
        "{refs} references ({loads} loads, {stores} stores, {ifetches} fetches) and {events} address-space events ({maps} maps, {unmaps} unmaps) of {name} recorded in {recording:.1} s ({rate:.1} M/s){skipped}, written to {}",
        output.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    /// The rate is over the time recording; the skipped references and their time apart.
    #[test]
    fn the_summary_gives_the_rate_of_recording_and_the_skip_apart() {
        let got = Received {
            counts: [6_000_000, 3_000_000, 1_000_000],
            events: [40, 7],
            stop: Some(Stop::Limit),
            ..Received::default()
        };
        let end = Ending { got, status: ExitStatus::from_raw(9), interrupted: false, seconds: Seconds { skipping: 30.0, recording: 2.0 } };
        let line = summary(500, &end, "bfs", Path::new("bfs.xlat"));
        assert_eq!(
            line,
            "10000000 references (6000000 loads, 3000000 stores, 1000000 fetches) and 47 address-space events \
             (40 maps, 7 unmaps) of bfs recorded in 2.0 s (5.0 M/s), \
             after skipping 500 references in 30.0 s, written to bfs.xlat"
        );
        assert!(!summary(0, &end, "bfs", Path::new("bfs.xlat")).contains("skipping"));
    }

    #[test]
    fn a_recording_ends_by_interrupt_only_when_the_interrupt_ended_it() {
        let (exited, signalled) = (ExitStatus::from_raw(0), ExitStatus::from_raw(2));
        // Cut by xlat's kill after Ctrl-C, or by a Ctrl-C the program died of.
        assert!(ended_by_interrupt(None, ExitStatus::from_raw(9), true));
        assert!(ended_by_interrupt(Some(Stop::Exit), signalled, true));
        // Finished first, then Ctrl-C: the program's own exit.
        assert!(!ended_by_interrupt(Some(Stop::Exit), exited, true));
        // Complete by their own rule whenever Ctrl-C came.
        assert!(!ended_by_interrupt(Some(Stop::Limit), ExitStatus::from_raw(9), true));
        assert!(!ended_by_interrupt(Some(Stop::Exec), ExitStatus::from_raw(9), true));
        // No Ctrl-C: killed from outside, or a program that died of a signal by itself.
        assert!(!ended_by_interrupt(None, ExitStatus::from_raw(9), false));
        assert!(!ended_by_interrupt(Some(Stop::Exit), signalled, false));
    }
}
