//! Differential test of the model request: `envaware-sim replay --json
//! --request openai` (the core's `openai::ChatRequest`) against AgentScope
//! 2.0.11 itself, step by step.
//!
//! `tests/reference/gen_requests.py` writes sessions (fixed seeds) that
//! reach every case of `OpenAIChatFormatter` a text context has; the
//! replay prints each step's request and writes each step's scenario;
//! `tests/reference/formatter.py` runs AgentScope's injection, its
//! `_prepare_model_input` and its formatter on each scenario and compares
//! the `messages` as JSON values. The example traces are compared too.
//!
//! Needs the reference Python and the sim binary, as `differential.rs`
//! does (a plain `cargo test` skips). `ENVAWARE_REQUEST_SESSIONS` sets the
//! sessions per seed (default 40, of 50 steps each, three seeds).

use std::path::Path;
use std::process::Command;

use xtask::needs;

const SEEDS: [u64; 3] = [1, 2, 3];
const STEPS: usize = 50;

fn run(what: &str, cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Replays `trace` with `--request openai` and has the reference compare
/// every step; returns `(identical, compared)`.
fn compare(python: &Path, sim: &Path, root: &Path, trace: &Path, name: &str) -> (usize, usize) {
    let out = root.join("tests/out");
    let scenarios = out.join(format!("requests-{name}.scenarios.jsonl"));
    let results = out.join(format!("requests-{name}.results.jsonl"));
    let printed = run(
        "envaware-sim replay --request openai",
        Command::new(sim)
            .args(["replay", "--json", "--request", "openai", "--emit-scenarios"])
            .arg(&scenarios)
            .arg(trace),
    );
    std::fs::write(&results, printed).expect("write the results");
    let report = run(
        &format!("formatter.py on {name}"),
        Command::new(python)
            .arg(root.join("tests/reference/formatter.py"))
            .arg(&scenarios)
            .arg(&results),
    );
    let last = report.lines().last().unwrap_or_default();
    println!("{name}: {last}");
    // "requests: I identical / T compared, C reference crashes"
    let numbers: Vec<usize> =
        last.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
    let [identical, compared, crashes] = numbers[..] else {
        panic!("formatter.py on {name}: unexpected report:\n{report}")
    };
    assert_eq!(crashes, 0, "the reference crashed on {name}:\n{report}");
    (identical, compared)
}

#[test]
fn requests_match_agentscope_openai_chat_formatter() {
    let root = needs::workspace();
    let Some(python) = needs::or_skip(needs::reference_python()) else { return };
    let Some(sim) = needs::or_skip(needs::sim_binary()) else { return };
    let sessions: usize = std::env::var("ENVAWARE_REQUEST_SESSIONS")
        .map(|v| v.parse().expect("ENVAWARE_REQUEST_SESSIONS is a number"))
        .unwrap_or(40);
    std::fs::create_dir_all(root.join("tests/out")).expect("create tests/out");

    let mut traces = Vec::new();
    for seed in SEEDS {
        let trace = root.join(format!("tests/out/requests-{seed}.trace.jsonl"));
        let text = run(
            "gen_requests.py",
            Command::new(&python).arg(root.join("tests/reference/gen_requests.py")).args([
                seed.to_string(),
                sessions.to_string(),
                STEPS.to_string(),
            ]),
        );
        std::fs::write(&trace, text).expect("write the trace");
        traces.push((trace, format!("seed-{seed}")));
    }
    for entry in std::fs::read_dir(root.join("examples")).expect("examples/") {
        let path = entry.expect("examples/ entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if let Some(stem) = name.strip_suffix(".trace.jsonl") {
            traces.push((path.clone(), stem.to_string()));
        }
    }

    let (mut identical, mut compared) = (0, 0);
    for (trace, name) in &traces {
        let (i, c) = compare(&python, &sim, &root, trace, name);
        assert_eq!(
            i,
            c,
            "{name}: {} of {c} requests differ from AgentScope's (formatter.py above)",
            c - i
        );
        (identical, compared) = (identical + i, compared + c);
    }
    println!("all: {identical} identical / {compared} requests compared");
    // Every generated step is compared (none skipped for a clock unset).
    assert!(compared >= SEEDS.len() * sessions * STEPS, "only {compared} requests compared");
}
