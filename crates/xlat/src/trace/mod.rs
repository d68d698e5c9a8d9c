//! Trace formats (placeholder until the trace readers land).
use crate::source::RefSource;
use crate::{Error, Result};
use serde::Serialize;
use std::path::Path;

/// A trace file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TraceFormat {
    /// xlat's native format.
    Native,
    /// Valgrind Lackey text.
    Lackey,
    /// ChampSim binary.
    ChampSim,
}

impl TraceFormat {
    /// Parses a format name.
    pub fn from_name(name: &str) -> Option<TraceFormat> {
        match name {
            "native" => Some(TraceFormat::Native),
            "lackey" => Some(TraceFormat::Lackey),
            "champsim" => Some(TraceFormat::ChampSim),
            _ => None,
        }
    }
}

/// Opens a trace.
pub fn open(path: &Path, _format: Option<TraceFormat>) -> Result<Box<dyn RefSource>> {
    Err(Error::Simulation(format!("{}: trace reading not available yet", path.display())))
}
