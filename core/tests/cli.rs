//! The `curta-core` binary: convert, inspect, quote and run, and errors
//! that name the core error and exit non-zero.

mod common;

use std::process::Command;

fn cli(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_curta-core"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn convert_inspect_quote_and_run() {
    let dir = std::env::temp_dir().join(format!("curta-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let models = common::models_dir();
    let artifact = dir.join("stories260K.curta");
    let (ok, _, err) = cli(&[
        "convert",
        models.join("stories260K.bin").to_str().unwrap(),
        models.join("tok512.bin").to_str().unwrap(),
        "-o",
        artifact.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert_eq!(std::fs::read(&artifact).unwrap(), common::stories260k());
    let a = artifact.to_str().unwrap();

    let (ok, out, _) = cli(&["inspect", a, "--json"]);
    assert!(ok);
    assert!(
        out.contains("\"vocab_size\":512") && out.contains("\"shared_classifier\":true"),
        "{out}"
    );

    let (ok, out, _) = cli(&[
        "quote",
        a,
        "--prompt",
        "Once upon a time",
        "--max-tokens",
        "12",
        "--json",
    ]);
    assert!(ok);
    assert_eq!(
        out.trim(),
        r#"{"turns":20,"state_size":48048,"account_size":48304}"#
    );

    let states = dir.join("states");
    let (ok, out, err) = cli(&[
        "run",
        a,
        "--prompt",
        "Once upon a time",
        "--max-tokens",
        "12",
        "--json",
        "--states",
        states.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(out.starts_with(r#"{"prompt_tokens":[1,403,407,261,378],"tokens":[432,383,286,261,376,298,315,421,395,317,426,338],"text":", there was a little girl named Lily. She","turns":20,"state_sha256":""#), "{out}");
    assert!(err.contains("turn 20 position"));
    // The states after init and after each of the 20 turns.
    assert!(states.join("000000.state").exists() && states.join("000020.state").exists());
    assert!(!states.join("000021.state").exists());

    // A decimal temperature is rounded to 16 fractional bits: 0.8 is 52429.
    let t = |args: &[&str]| {
        cli(&[
            &[
                "run",
                a,
                "--prompt",
                "Once",
                "--max-tokens",
                "8",
                "--seed",
                "3",
                "--json",
            ],
            args,
        ]
        .concat())
        .1
    };
    assert_eq!(
        t(&["--temperature", "0.8"]),
        t(&["--temperature-q16", "52429"])
    );

    // Errors name the core error and exit non-zero.
    let (ok, _, err) = cli(&["run", a, "--prompt", "Once", "--max-tokens", "0"]);
    assert!(!ok);
    assert!(err.contains("InvalidPrompt (core error 6)"), "{err}");
    let (ok, _, err) = cli(&["inspect", models.join("tok512.bin").to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("InvalidFormat (core error 2)"), "{err}");
    let (ok, _, err) = cli(&[
        "run",
        a,
        "--prompt",
        "x",
        "--max-tokens",
        "2",
        "--temperature",
        "lots",
    ]);
    assert!(!ok && err.contains("bad temperature"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
