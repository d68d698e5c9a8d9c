//! Experiment files, from text to validated specs: arbitrary text (the dictionary
//! `fuzz/experiment.dict` holds the real field names and values, so that mutations reach
//! deep into valid structure). An error names what is wrong; a panic or a hang is a finding.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = xlat::config::parse_experiment(text, std::path::Path::new("/nonexistent"));
    }
});
