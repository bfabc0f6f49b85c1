//! The frame decoder and every payload decoder behind it.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    focuser_reader::corpus::check_frames(data);
});
