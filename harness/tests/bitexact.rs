//! `make test-bitexact`: every run of `golden/manifest.json` (or those named
//! in `CURTA_RUNS`), turn by turn on the SBF VM, natively and through the
//! WebAssembly module; every turn's state equal on the three and to the
//! golden receipt. Then the compute-unit report, which fails on a turn over
//! the transaction limit or a total grown more than 1% over golden, and the
//! cost of every chunk on the measuring build, which fails on a chunk that
//! cost more than its charge or a turn whose own overhead did.

use curta_harness::receipt::Receipt;
use curta_harness::replay::replay_all;
use curta_harness::{costs, cu_report, manifest, slope};

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
    let slopes: Vec<_> = ["stories260K", "stories15M-synthetic"]
        .iter()
        .map(|model| runtime.block_on(slope::measure(model)))
        .collect();
    let (mut md, cu_failures) = cu_report::render(&reports, &golden, &slopes);
    let measured: Vec<_> = runs
        .iter()
        .map(|spec| (spec.name.clone(), runtime.block_on(costs::measure(spec))))
        .collect();
    let models = runs
        .iter()
        .map(|s| (s.name.clone(), s.model.clone()))
        .collect();
    md.push('\n');
    md.push_str(&costs::render(&measured, &models));
    failures.extend(costs::overruns(&measured));
    let path = cu_report::write(&md);
    println!("{md}\n(written to {})", path.display());
    failures.extend(cu_failures);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
