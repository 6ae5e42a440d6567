//! `cargo xtask bench-args`: argument equality in MB/s, envaware's
//! `argument_key` beside the reference's `json.dumps(json.loads(raw),
//! sort_keys=True)` on the same texts, in one run.

use std::process::Command;

use crate::{cargo, ensure_reference_venv, root, run};

/// The median of criterion benchmark `args/NAME`, in nanoseconds.
fn criterion_median_ns(name: &str) -> Option<f64> {
    crate::bench::median_ns(&format!("args/{name}"))
}

/// `"key":VALUE` from one of `bench_args.py`'s flat JSON lines.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let pattern = format!("\"{key}\": ");
    let rest = &line[line.find(&pattern)? + pattern.len()..];
    Some(rest[..rest.find([',', '}'])?].trim().trim_matches('"'))
}

fn mb_per_s(bytes: f64, ns: f64) -> f64 {
    bytes / ns * 1e3
}

pub fn bench_args(args: &[String]) -> Result<(), String> {
    let python = ensure_reference_venv()?;
    let mut cmd = cargo();
    cmd.args(["bench", "--locked", "-p", "envaware", "--bench", "args", "--"]);
    if !args.iter().any(|a| a == "--long") {
        cmd.args(["--warm-up-time", "1", "--measurement-time", "3"]);
    }
    run("cargo bench --bench args (core, host capacity)", &mut cmd)?;
    let inputs = root().join("target/bench-args");
    eprintln!("==> the reference on the same texts");
    let out = xtask::checked_output(
        "bench_args.py",
        Command::new(&python).arg(root().join("tests/reference/bench_args.py")).arg(&inputs),
    )?;
    println!("\nargument equality (median of this run; Python: json.dumps(json.loads(raw), sort_keys=True)):");
    // Wall-clock medians: on a shared machine, the load says how far off
    // the absolute figures may be (the ratios come from one run).
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        println!("load average: {}", load.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    }
    println!(
        "{:<20} {:>9} {:>12} {:>10} {:>12} {:>10} {:>8}",
        "input", "bytes", "envaware", "MB/s", "Python", "MB/s", "ratio"
    );
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let (Some(name), Some(bytes), Some(py_ns)) =
            (field(line, "name"), field(line, "bytes"), field(line, "ns"))
        else {
            return Err(format!("bench_args.py: unexpected line {line:?}"));
        };
        let bytes: f64 = bytes.parse().map_err(|_| format!("bench_args.py: bytes in {line:?}"))?;
        let py_ns: f64 = py_ns.parse().map_err(|_| format!("bench_args.py: ns in {line:?}"))?;
        let ns =
            criterion_median_ns(name).ok_or(format!("no criterion estimate for args/{name}"))?;
        println!(
            "{name:<20} {bytes:>9} {:>9.3} µs {:>10.1} {:>9.3} µs {:>10.1} {:>7.1}x",
            ns / 1e3,
            mb_per_s(bytes, ns),
            py_ns / 1e3,
            mb_per_s(bytes, py_ns),
            py_ns / ns
        );
    }
    Ok(())
}
