#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let d = mtr_fuzz::file("benchmark.toml", data);
    let dir = mtr_core::BenchmarkDir::new(d.parent().unwrap_or(std::path::Path::new(".")));
    let _ = dir.manifest();
});
