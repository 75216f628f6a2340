#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| curta_fuzz_checks::protocol::check(data));
