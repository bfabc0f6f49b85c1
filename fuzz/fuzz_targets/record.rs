//! The item file's decoders: file header, record header, whole records.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    focuser_reader::corpus::check_record(data);
});
