//! One module per subcommand.

pub mod bench;
pub mod hash;
pub mod plot;
pub mod presets;
pub mod run;
pub mod schema;
pub mod trace;
pub mod workload;

/// An argument value a command does not take, found only once the command weighs it against
/// its other arguments (a `--set` value the chosen workload rejects): exit code 2, as clap's
/// own usage errors.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}
