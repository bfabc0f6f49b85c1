//! A sealed segment (index and item file) read whole by a cursor, `lag` and `dump`.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    focuser_reader::corpus::check_segment(data);
});
