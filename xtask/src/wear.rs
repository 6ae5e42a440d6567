//! `cargo xtask wear`: the session log's wear per step, from the power-cut
//! tests' wear runs (`tests/tests/power_cut.rs`: the demo session as the
//! firmware logs it in `cargo xtask demo`, the same without the model's
//! replies, and a long generated session, each in a 64 KiB region of 1 KiB
//! pages over sequential-storage's mock flash, which counts the bytes
//! written and the pages erased once the region has filled), with the
//! projected lifetime of 10,000-cycle pages at one step a minute. The last
//! line is the demo's.

use crate::{cargo, root};

/// The lifetime the demo session should reach on 64 KiB (docs/reboot.md,
/// "Wear"): printed beside the figure, not enforced (a size goal is
/// reported, never a test that fails on a noisy machine).
const GOAL_YEARS: f64 = 10.0;

pub fn wear() -> Result<(), String> {
    eprintln!("==> the wear runs of tests/tests/power_cut.rs (release build)");
    let out = cargo()
        .current_dir(root())
        .args(["test", "--locked", "--release", "-p", "envaware-tests", "--test", "power_cut"])
        .args(["wear_per_step", "--", "--nocapture", "--test-threads", "1"])
        .output()
        .map_err(|e| format!("cargo test: cannot start: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "the wear runs failed:\n{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("wear, ")).collect();
    lines.iter().for_each(|line| println!("{line}"));
    let demo = lines
        .iter()
        .find_map(|line| line.strip_prefix("wear, demo session: ").and_then(figures))
        .ok_or("the demo session's wear line is missing from the test's output")?;
    let (bytes, erases, years) = demo;
    let met = if years >= GOAL_YEARS { "met" } else { "missed" };
    println!("goal: {GOAL_YEARS} years on 64 KiB at a step a minute for the demo session: {met}");
    println!(
        "wear: demo {bytes:.0} bytes/step, {erases:.3} erases/step, lifetime {years:.1} years on 64 KiB at 1 step/min"
    );
    Ok(())
}

/// Bytes and erases per step, and the years, from a wear line: `…: 486
/// bytes and 0.5120 erases per step; … a step a minute: 2.4 years`.
fn figures(line: &str) -> Option<(f64, f64, f64)> {
    let (_, per_step) = line.split_once(" pages erased: ")?;
    let mut words = per_step.split_whitespace();
    let bytes = words.next()?.parse().ok()?;
    let erases = words.nth(2)?.parse().ok()?;
    let years = line.rsplit_once(": ")?.1.strip_suffix(" years")?.parse().ok()?;
    Some((bytes, erases, years))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_wear_line_gives_its_figures() {
        let line = "wear, demo session: 2400 steps, 8001 items; over the last 1800 steps 304976 bytes written, 242 pages erased: 169 bytes and 0.1344 erases per step; 64 KiB of 10,000-cycle pages at a step a minute: 9.1 years";
        assert_eq!(super::figures(line), Some((169.0, 0.1344, 9.1)));
        assert_eq!(super::figures("wear, demo session: nothing"), None);
    }
}
