//! The lackey reader on arbitrary bytes: read to the end or an error, never a panic or a hang.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use xlat::trace::TraceFormat;

fuzz_target!(|data: &[u8]| {
    let (_dir, path) = common::file("input.lackey", data);
    if let Ok(source) = xlat::trace::open(&path, Some(TraceFormat::Lackey)) {
        common::drain(source);
    }
});
