//! `cargo xtask mutants [ARGS...]`: `cargo mutants -p envaware` over the
//! core's own unit tests (settings in `.cargo/mutants.toml`: the optimized
//! `mutants` profile, nextest, `--lib`), then the score it measured.
//!
//! The ARGS go to cargo-mutants as they are: `-f core/src/args/floats.rs` for one
//! file, `--shard 0/8 --sharding round-robin` for an eighth of every file
//! (the whole core is about 2,300 mutants at a few seconds each on two
//! cores, so sessions take shards), `--iterate` to skip what was caught
//! before.
//! The results stay in `target/mutants/mutants.out/`.

use std::path::Path;
use std::process::Command;

use crate::{ensure_reference_venv, root, run, succeeds};

/// What one run of cargo-mutants found, from its `outcomes.json`.
#[derive(Debug, Default, PartialEq, Eq)]
struct Score {
    caught: u64,
    timeout: u64,
    missed: u64,
    unviable: u64,
}

impl Score {
    /// Reads the summary counts cargo-mutants writes at the end of a run.
    fn read(outcomes: &Path) -> Result<Score, String> {
        let text = std::fs::read_to_string(outcomes)
            .map_err(|e| format!("{}: {e}", outcomes.display()))?;
        let count = |key: &str| -> Result<u64, String> {
            let at = text
                .find(&format!("\"{key}\":"))
                .ok_or_else(|| format!("{}: no {key:?} count", outcomes.display()))?;
            let digits: String = text[at + key.len() + 3..]
                .trim_start()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().map_err(|_| format!("{}: {key:?} is not a count", outcomes.display()))
        };
        Ok(Score {
            caught: count("caught")?,
            timeout: count("timeout")?,
            missed: count("missed")?,
            unviable: count("unviable")?,
        })
    }

    /// The share of viable mutants the tests caught; a mutant that makes
    /// the tests hang (a timeout) is caught too, as cargo-mutants counts it.
    fn line(&self) -> String {
        let viable = self.caught + self.timeout + self.missed;
        let percent = if viable == 0 {
            100.0
        } else {
            100.0 * (self.caught + self.timeout) as f64 / viable as f64
        };
        format!(
            "mutation score: {percent:.1}% ({} caught + {} timeouts of {viable} viable; {} missed, {} unviable)",
            self.caught, self.timeout, self.missed, self.unviable
        )
    }
}

/// Installs cargo-mutants and cargo-nextest when missing, runs the
/// mutants, and prints the score.
pub fn mutants(args: &[String]) -> Result<(), String> {
    // `.cargo/mutants.toml` runs the tests with nextest.
    for tool in ["cargo-mutants", "cargo-nextest"] {
        let sub = tool.trim_start_matches("cargo-");
        if !succeeds(Command::new("cargo").args([sub, "--version"])) {
            run(
                &format!("cargo install --locked {tool}"),
                Command::new("cargo").args(["install", "--locked", tool]),
            )?;
        }
    }
    // The zone-rule tests compare with Python's zoneinfo; the copy of the
    // tree cargo-mutants tests in has no `.venv`, so name it.
    let python = ensure_reference_venv()?;
    let out = root().join("target/mutants");
    let status = Command::new("cargo")
        .args(["mutants", "-p", "envaware", "-o"])
        .arg(&out)
        .args(args)
        .env("ENVAWARE_REF_PYTHON", &python)
        // A check that skipped would let its mutants live.
        .env(xtask::needs::REQUIRE_VAR, "1")
        .current_dir(root())
        .status()
        .map_err(|e| format!("cargo mutants: cannot start: {e}"))?;
    let score = Score::read(&out.join("mutants.out/outcomes.json"))?;
    println!("{}", score.line());
    println!("missed mutants: {}", out.join("mutants.out/missed.txt").display());
    // cargo-mutants exits 2 when it found missed mutants and 3 on timeouts:
    // the score says so; anything else is a failure to run.
    match status.code() {
        Some(0 | 2 | 3) => Ok(()),
        _ => Err(format!("cargo mutants failed ({status})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_counts_and_scores_timeouts_as_caught() {
        let dir = std::env::temp_dir().join(format!("xtask-mutants-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("outcomes.json");
        std::fs::write(
            &file,
            r#"{"outcomes": [], "total_mutants": 20, "caught": 15, "missed": 2, "timeout": 1, "unviable": 2, "success": 0}"#,
        )
        .unwrap();
        let score = Score::read(&file).unwrap();
        assert_eq!(score, Score { caught: 15, timeout: 1, missed: 2, unviable: 2 });
        assert_eq!(
            score.line(),
            "mutation score: 88.9% (15 caught + 1 timeouts of 18 viable; 2 missed, 2 unviable)"
        );
        std::fs::write(&file, r#"{"caught": 1}"#).unwrap();
        assert!(Score::read(&file).unwrap_err().contains("no \"timeout\" count"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
