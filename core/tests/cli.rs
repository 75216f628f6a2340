//! The `curta-core` binary: convert, inspect, quote and run; errors that
//! name the value, the limit and the core error, and exit non-zero.

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
    assert!(out.ends_with("\"reason\":\"max_tokens\"}\n"), "{out}");
    // Off a terminal and without --verbose, no line per turn.
    assert!(!err.contains("turn 1 "), "{err}");
    // The states after init and after each of the 20 turns.
    assert!(states.join("000000.state").exists() && states.join("000020.state").exists());
    assert!(!states.join("000021.state").exists());

    // The text on stdout, a summary on stderr; --verbose adds a line per turn.
    let reference = [
        "run",
        a,
        "--prompt",
        "Once upon a time",
        "--max-tokens",
        "12",
    ];
    let (ok, out, err) = cli(&reference);
    assert!(ok, "{err}");
    assert_eq!(out, ", there was a little girl named Lily. She\n");
    assert_eq!(err, "12 tokens in 20 turns, ended by max tokens\n");
    let (ok, _, err) = cli(&[&reference[..], &["--verbose"]].concat());
    assert!(ok);
    assert!(
        err.starts_with("turn 1 position 0 phase 3 tokens 0\n"),
        "{err}"
    );
    assert!(
        err.contains("turn 20 position 15 phase done tokens 12\n"),
        "{err}"
    );

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

    // Errors name the value and the limit, then the core error, and exit
    // non-zero.
    let failure = |args: &[&str]| {
        let (ok, _, err) = cli(args);
        assert!(!ok, "{args:?} succeeded");
        err
    };
    let err = failure(&["run", a, "--prompt", "Once", "--max-tokens", "100000"]);
    assert_eq!(
        err,
        "error: max tokens 100000: the context is 512 positions (InvalidPrompt, core error 6)\n"
    );
    let err = failure(&["quote", a, "--prompt", "Once", "--max-tokens", "0"]);
    assert!(err.starts_with("error: max tokens 0: "), "{err}");
    assert!(err.ends_with(" (InvalidPrompt, core error 6)\n"), "{err}");
    let err = failure(&[
        "run",
        a,
        "--prompt",
        "Once",
        "--max-tokens",
        "2",
        "--temperature",
        "17",
    ]);
    assert!(
        err.starts_with("error: temperature 17: the highest is 16 "),
        "{err}"
    );
    let long = "x".repeat(1025);
    let err = failure(&["quote", a, "--prompt", &long, "--max-tokens", "2"]);
    assert!(
        err.starts_with("error: a prompt of 1025 bytes: the longest is 1024 "),
        "{err}"
    );

    let tok512 = models.join("tok512.bin");
    let err = failure(&["inspect", tok512.to_str().unwrap()]);
    assert!(err.contains("tok512.bin is not a Curta artifact: it does not open with CURTAW01 (InvalidFormat, core error 2)"), "{err}");
    let readme = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
    let out = dir.join("readme.curta");
    let err = failure(&[
        "convert",
        readme,
        tok512.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        err.starts_with(&format!(
            "error: {readme} is not a llama2.c checkpoint: its header's dim "
        )),
        "{err}"
    );
    assert!(err.ends_with(" (InvalidConfig, core error 1)\n"), "{err}");
    let checkpoint = models.join("stories260K.bin");
    let err = failure(&[
        "convert",
        checkpoint.to_str().unwrap(),
        models.join("tokenizer.bin").to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        err.contains(
            "tokenizer.bin is not a llama2.c tokenizer for this checkpoint: it is 433869 bytes, "
        ),
        "{err}"
    );
    assert!(!out.exists());
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

/// `plan` prints the next turn of a state as a client sends it; quotes and
/// runs follow `--allowance`; `--help` and `--version` answer and exit 0.
#[test]
fn plan_allowance_help_and_version() {
    let dir = std::env::temp_dir().join(format!("curta-cli-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let artifact = dir.join("stories260K.curta");
    std::fs::write(&artifact, common::stories260k()).unwrap();
    let a = artifact.to_str().unwrap();
    let states = dir.join("states");
    let reference = ["--prompt", "Once upon a time", "--max-tokens", "12"];
    let run = [
        &["run", a][..],
        &reference,
        &["--states", states.to_str().unwrap()],
    ]
    .concat();
    let (ok, _, err) = cli(&run);
    assert!(ok, "{err}");

    let plan = |state: &str, extra: &[&str]| {
        let path = states.join(state);
        cli(&[
            &["plan", a, "--state", path.to_str().unwrap(), "--json"][..],
            extra,
        ]
        .concat())
    };
    // The first turn tokenizes: no matrix section, priced at the allowance.
    let (ok, out, err) = plan("000000.state", &[]);
    assert!(ok, "{err}");
    assert_eq!(
        out.trim(),
        r#"{"turn":1,"expected_turns":0,"tokenizing":true,"sections":[],"estimated_cu":1350000,"bound_cu":1350000,"compute_unit_limit":1350300,"max_generated":0}"#
    );
    // The second reads the output section (the embedding), then layer
    // sections: golden/receipts/stories260k-reference.txt charges 1,349,821,
    // and the measured table prices the same chunks at 1,043,787, which the
    // client asks for.
    let (ok, out, _) = plan("000001.state", &[]);
    assert!(ok);
    assert_eq!(
        out.trim(),
        r#"{"turn":2,"expected_turns":1,"tokenizing":false,"sections":[2,1],"estimated_cu":1349821,"bound_cu":1043787,"compute_unit_limit":1044087,"max_generated":0}"#
    );
    let (ok, out, _) = plan("000005.state", &["--allowance", "500000"]);
    assert!(ok);
    assert!(out.contains(r#""estimated_cu":499208,"#), "{out}");
    let (ok, _, err) = plan("000020.state", &[]);
    assert!(!ok);
    assert_eq!(
        err,
        "error: the run is complete: it has no next turn (InvalidState, core error 3)\n"
    );
    let (ok, _, err) = cli(&["plan", a, "--state", a]);
    assert!(!ok);
    assert!(err.contains("is not a Curta state"), "{err}");

    // A smaller allowance: more turns, the same text, as quoted.
    let quote = cli(&[
        &["quote", a][..],
        &reference,
        &["--allowance", "500000", "--json"],
    ]
    .concat());
    assert!(
        quote.0 && quote.1.starts_with(r#"{"turns":53,"#),
        "{}",
        quote.1
    );
    let (ok, out, _) = cli(&[
        &["run", a][..],
        &reference,
        &["--allowance", "500000", "--json"],
    ]
    .concat());
    assert!(ok);
    assert!(
        out.contains(r#""text":", there was a little girl named Lily. She","turns":53,"#),
        "{out}"
    );
    let (ok, _, err) = cli(&[&["run", a][..], &reference, &["--allowance", "5"]].concat());
    assert!(!ok);
    assert_eq!(
        err,
        "error: --allowance 5: a turn allowance is 22096 to 1350000 compute units (InvalidConfig, core error 1)\n"
    );

    // After a command too (`curta-core run --help` once said "--help needs
    // a value").
    let helps: [&[&str]; 5] = [
        &["--help"],
        &["-h"],
        &["help"],
        &["run", "--help"],
        &["quote", "-h"],
    ];
    for help in helps {
        let (ok, out, _) = cli(help);
        assert!(ok, "{help:?}");
        assert!(out.starts_with("curta-core 0.1.0\nusage:\n"), "{out}");
        assert!(
            out.contains("curta-core plan ARTIFACT --state FILE"),
            "{out}"
        );
    }
    let (ok, out, _) = cli(&["--version"]);
    assert!(ok);
    assert_eq!(out, "curta-core 0.1.0\n");
    std::fs::remove_dir_all(&dir).ok();
}

/// `convert --charges measured` makes a model planned with the measured
/// table; `inspect`, `quote` and `run` use it; an unknown table is refused.
#[test]
fn convert_with_the_measured_charges() {
    let dir = std::env::temp_dir().join(format!("curta-cli-measured-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let models = common::models_dir();
    let (checkpoint, tokenizer) = (models.join("stories260K.bin"), models.join("tok512.bin"));
    let artifact = dir.join("stories260K-measured.curta");
    let convert = |table: &str| {
        cli(&[
            "convert",
            checkpoint.to_str().unwrap(),
            tokenizer.to_str().unwrap(),
            "-o",
            artifact.to_str().unwrap(),
            "--charges",
            table,
        ])
    };
    let (ok, _, err) = convert("cheap");
    assert!(!ok);
    assert!(
        err.contains("--charges cheap") && err.contains("measured"),
        "{err}"
    );
    let (ok, out, err) = convert("measured");
    assert!(ok, "{err}");
    assert!(out.contains("measured charges"), "{out}");
    assert_eq!(
        std::fs::read(&artifact).unwrap(),
        common::stories260k_measured()
    );
    let a = artifact.to_str().unwrap();
    let (ok, out, _) = cli(&["inspect", a, "--json"]);
    assert!(ok && out.contains("\"charges\":\"measured\""), "{out}");
    let args = [
        "--prompt",
        "Once upon a time",
        "--max-tokens",
        "12",
        "--json",
    ];
    let (ok, out, _) = cli(&[&["quote", a][..], &args].concat());
    assert!(ok);
    assert_eq!(
        out.trim(),
        r#"{"turns":16,"state_size":48048,"account_size":48304}"#
    );
    let (ok, out, err) = cli(&[&["run", a][..], &args].concat());
    assert!(ok, "{err}");
    // The same tokens as under the specification's table, in 16 turns.
    assert!(out.starts_with(r#"{"prompt_tokens":[1,403,407,261,378],"tokens":[432,383,286,261,376,298,315,421,395,317,426,338],"text":", there was a little girl named Lily. She","turns":16,"#), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A reader that stops early (`curta-core inspect ... | head -1`) ends the
/// binary quietly, with success, rather than with a panic.
#[test]
fn a_closed_pipe_ends_quietly() {
    use std::process::Stdio;
    let dir = std::env::temp_dir().join(format!("curta-cli-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let artifact = dir.join("stories260K.curta");
    std::fs::write(&artifact, common::stories260k()).unwrap();
    for args in [
        &["inspect", artifact.to_str().unwrap()][..],
        &["inspect", artifact.to_str().unwrap(), "--json"],
        &["--help"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_curta-core"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The read end closed before the binary writes (it reads its
        // file first), so its first line meets a closed pipe.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {err}", out.status);
        assert_eq!(err, "", "{args:?}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
