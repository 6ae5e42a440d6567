//! `cargo xtask bench`: the core's criterion benchmarks, then the ratios
//! from this one run (shared machines are noisy: compare within a run,
//! never against a fixed number of microseconds).

use std::path::Path;

use crate::{cargo, root, run};

/// Context lengths the `decide` benchmark measures.
const LENGTHS: &[u32] = &[10, 100, 1_000, 10_000];

/// The median of one criterion benchmark, in nanoseconds.
fn median_ns(id: &str) -> Option<f64> {
    let path = root().join("target/criterion").join(id).join("new/estimates.json");
    let text = std::fs::read_to_string(Path::new(&path)).ok()?;
    // `"median":{"confidence_interval":{...},"point_estimate":X,...}`
    let median = &text[text.find("\"median\":")?..];
    let value = &median[median.find("\"point_estimate\":")? + "\"point_estimate\":".len()..];
    value[..value.find([',', '}'])?].parse().ok()
}

pub fn bench(args: &[String]) -> Result<(), String> {
    let mut cmd = cargo();
    cmd.args(["bench", "-p", "envaware", "--bench", "decide", "--"]);
    if !args.iter().any(|a| a == "--long") {
        cmd.args(["--warm-up-time", "1", "--measurement-time", "3"]);
    }
    run("cargo bench (core)", &mut cmd)?;
    println!("\ndecide, by context length (median of this run):");
    println!("{:>8}  {:>12}  {:>12}  {:>8}", "messages", "full scan", "tracker", "ratio");
    for len in LENGTHS {
        let full = median_ns(&format!("decide/full_scan/{len}")).ok_or("missing full_scan estimates")?;
        let tracked = median_ns(&format!("decide/tracker/{len}")).ok_or("missing tracker estimates")?;
        println!("{len:>8}  {:>9.2} µs  {:>9.2} µs  {:>7.1}x", full / 1e3, tracked / 1e3, full / tracked);
    }
    // Criterion names a plain benchmark's folder with `/` replaced by `_`.
    if let Some(key) = median_ns("argument_key_100_bytes") {
        println!("argument_key, 100-byte JSON: {:.2} µs", key / 1e3);
    }
    Ok(())
}
