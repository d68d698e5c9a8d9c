//! The Accel-Sim kernel-trace reader on arbitrary bytes (one kernel's `.traceg` file): read to
//! the end or an error, never a panic or a hang.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| common::read_as(data, "traceg", xlat::trace::TraceFormat::AccelSim));
