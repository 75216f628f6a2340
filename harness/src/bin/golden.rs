//! `make golden`: replays every run of `golden/manifest.json` (or those
//! named in `CURTA_RUNS`) on the three targets and, only if they agree on
//! every turn, writes `golden/receipts/NAME.txt` and `golden/slopes.txt`.
//! Tests never write golden files; a receipt changes only with a commit that
//! says why.

use curta_harness::replay::replay;
use curta_harness::wasm::WasmCore;
use curta_harness::{cu_report, manifest, slope};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut wasm =
        WasmCore::load_default().unwrap_or_else(|e| panic!("{e} (run `make build-wasm`)"));
    let mut reports = vec![];
    for spec in manifest::selected() {
        let r = replay(&spec, None, &mut wasm).await;
        if let Some(f) = &r.failure {
            eprintln!("error: {f}\nno golden file written");
            std::process::exit(1);
        }
        println!(
            "{}: {} turns, {:?}",
            spec.name,
            r.receipt.turns.len() - 1,
            r.times
        );
        reports.push(r);
    }
    let mut slopes = vec![];
    for model in ["stories260K", "stories15M-synthetic"] {
        slopes.push(slope::measure(model).await);
    }
    for r in &reports {
        r.receipt.save();
    }
    cu_report::save_slopes(&slopes);
    let golden = vec![None; reports.len()];
    let (md, _) = cu_report::render(&reports, &golden, &slopes);
    println!("{md}");
    println!("wrote {} receipts and golden/slopes.txt", reports.len());
}
