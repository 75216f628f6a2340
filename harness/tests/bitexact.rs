//! `make test-bitexact`: every run of `golden/manifest.json` (or those named
//! in `CURTA_RUNS`), turn by turn on the SBF VM, natively and through the
//! WebAssembly module; every turn's state equal on the three and to the
//! golden receipt. Then the compute-unit report, which fails on a turn over
//! the transaction limit or a total grown more than 1% over golden.

use curta_harness::receipt::Receipt;
use curta_harness::replay::replay;
use curta_harness::wasm::WasmCore;
use curta_harness::{cu_report, manifest, slope};

#[tokio::test(flavor = "current_thread")]
async fn every_golden_run_is_bit_exact_on_every_target() {
    let mut wasm =
        WasmCore::load_default().unwrap_or_else(|e| panic!("{e} (run `make build-wasm`)"));
    let runs = manifest::selected();
    assert!(!runs.is_empty(), "no runs selected");
    let mut reports = vec![];
    let mut golden = vec![];
    let mut failures = vec![];
    for spec in runs {
        let g = Receipt::load(&spec.name).unwrap_or_else(|| {
            panic!(
                "no golden receipt for {}: run `make golden` and commit it",
                spec.name
            )
        });
        let r = replay(&spec, Some(&g), &mut wasm).await;
        let t = &r.times;
        println!(
            "{}: {} turns; native {:.3} s, SBF {:.3} s, WebAssembly {:.3} s{}",
            spec.name,
            r.receipt.turns.len() - 1,
            t.native.as_secs_f64(),
            t.sbf.as_secs_f64(),
            t.wasm.as_secs_f64(),
            if r.failure.is_some() { " FAILED" } else { "" }
        );
        failures.extend(r.failure.clone());
        reports.push(r);
        golden.push(Some(g));
    }
    let mut slopes = vec![];
    for model in ["stories260K", "stories15M-synthetic"] {
        slopes.push(slope::measure(model).await);
    }
    let (md, cu_failures) = cu_report::render(&reports, &golden, &slopes);
    let path = cu_report::write(&md);
    println!("{md}\n(written to {})", path.display());
    failures.extend(cu_failures);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
