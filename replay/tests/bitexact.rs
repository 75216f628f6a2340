//! `make test-bitexact`: every run of `golden/manifest.json` (or those named
//! in `CURTA_RUNS`), turn by turn on the SBF VM, natively and through the
//! WebAssembly module; every turn's state equal on the three and to the
//! golden receipt, and every turn's program within the measured price of
//! its chunks (what a client asks for it). Then the compute-unit report,
//! which fails on a turn over the transaction limit, a total grown more
//! than 1% over golden or a turn whose program cost more than its plan. (Each chunk against its charge:
//! `make test-costs`.)

use curta_replay::receipt::Receipt;
use curta_replay::replay::replay_all;
use curta_replay::{cu_report, manifest, slope};

#[test]
fn every_golden_run_is_bit_exact_on_every_target() {
    let runs = manifest::selected();
    assert!(!runs.is_empty(), "no runs selected");
    let golden: Vec<Option<Receipt>> = runs
        .iter()
        .map(|spec| {
            Some(Receipt::load(&spec.name).unwrap_or_else(|| {
                panic!(
                    "no golden receipt for {}: run `make golden` and commit it",
                    spec.name
                )
            }))
        })
        .collect();
    let reports = replay_all(&runs, &golden);
    let mut failures = vec![];
    for r in &reports {
        let t = &r.times;
        println!(
            "{}: {} turns; native {:.3} s, SBF {:.3} s, WebAssembly {:.3} s{}",
            r.spec.name,
            r.receipt.turns.len() - 1,
            t.native.as_secs_f64(),
            t.sbf.as_secs_f64(),
            t.wasm.as_secs_f64(),
            if r.failure.is_some() { " FAILED" } else { "" }
        );
        failures.extend(r.failure.clone());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let slopes: Vec<_> = slope::MODELS
        .iter()
        .map(|model| runtime.block_on(slope::measure(model)))
        .collect();
    let (md, cu_failures) = cu_report::render(&reports, &golden, &slopes);
    let path = cu_report::write(&md);
    println!("{md}\n(written to {})", path.display());
    failures.extend(cu_failures);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
