//! Format detection, then the reader it picks, on arbitrary bytes under a name that tells no
//! format: compressed inputs (xz, gzip, zstd magic) go through their decoders too.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (_dir, path) = common::file("input", data);
    if xlat::trace::detect(&path).is_ok() {
        if let Ok(source) = xlat::trace::open(&path, None) {
            common::drain(source);
        }
    }
});
