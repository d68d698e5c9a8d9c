//! The error type of the engine: every variant names where the problem is.

use std::path::PathBuf;

/// Errors from reading inputs, validating configurations and running simulations.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O error on a named file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Malformed content at a line of a text input.
    #[error("{path}:{line}: {message}")]
    AtLine {
        /// The file (or `<stdin>`).
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// Malformed content at a byte offset of a binary input.
    #[error("{path}: at byte offset {offset}: {message}")]
    AtOffset {
        /// The file (or `<stdin>`).
        path: PathBuf,
        /// Byte offset in the file where the problem starts.
        offset: u64,
        /// What is wrong.
        message: String,
    },
    /// A configuration value that is invalid, named by its path (`machine[1].tlb.levels[0]...`).
    #[error("{path}: {message}")]
    Config {
        /// Dotted path of the offending field (prefixed by the file name when known).
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The simulated machine cannot continue (for example physical memory is exhausted).
    #[error("{0}")]
    Simulation(String),
    /// The user interrupted a command that has no partial result to keep (a conversion).
    #[error("interrupted")]
    Interrupted,
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io { path: path.into(), source }
    }

    /// A configuration error at `path`.
    pub fn config(path: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Config { path: path.into(), message: message.into() }
    }
}

/// Result alias for the engine.
pub type Result<T> = std::result::Result<T, Error>;
