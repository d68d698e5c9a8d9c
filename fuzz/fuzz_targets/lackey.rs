//! The lackey reader on arbitrary bytes: read to the end or an error, never a panic or a hang.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| common::read_as(data, "lackey", xlat::trace::TraceFormat::Lackey));
