//! Resend snapshots' ask files and manifests.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    focuser_reader::corpus::check_snapshot_files(data);
});
