//! What a test needs beyond Rust (the reference Python with AgentScope, the
//! `envaware-sim` binary, QEMU, defmt-print, Chromium, the firmware images),
//! and the one decision when it is missing.
//!
//! A plain `cargo test` on a fresh clone has none of them: the check then
//! skips, saying so in one line that names `cargo xtask test`. Under `cargo
//! xtask test` (which installs them all and sets [`REQUIRE_VAR`]) and under
//! CI (`CI=true`) a check must not skip: a missing tool fails it.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Set to `1` by `cargo xtask test`: no check may skip.
pub const REQUIRE_VAR: &str = "ENVAWARE_REQUIRE_ALL";

/// The stamp `cargo xtask test` writes into the venv once AgentScope is
/// installed: the requirements text it installed.
const VENV_STAMP: &str = "envaware-requirements.txt";

/// Whether every check must run (`cargo xtask test`, or CI).
pub fn required() -> bool {
    std::env::var(REQUIRE_VAR).as_deref() == Ok("1") || std::env::var("CI").as_deref() == Ok("true")
}

/// `found`, or, when it is missing, `None` after one line saying that the
/// running test skips; where checks may not skip ([`required`]), a panic
/// that says what is missing.
pub fn or_skip<T>(found: Result<T, String>) -> Option<T> {
    let missing = match found {
        Ok(t) => return Some(t),
        Err(missing) => missing,
    };
    let thread = std::thread::current();
    let test = thread.name().filter(|n| *n != "main").unwrap_or("a check");
    assert!(
        !required(),
        "{missing}: under `cargo xtask test` and CI (`CI=true`) no check may skip"
    );
    // Past the test harness's capture (which keeps a passing test's
    // `eprintln!`), so a plain `cargo test` shows what it did not check.
    let line =
        format!("skipped {test}: {missing}; `cargo xtask test` provides it and runs the check\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
    None
}

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

/// The requirements of the reference venv.
pub fn requirements() -> PathBuf {
    workspace().join("tests/reference/requirements.txt")
}

/// Whether the venv at `venv` holds what `requirements.txt` asks for now (its
/// stamp matches); a venv without it is not the reference.
pub fn venv_ready(venv: &Path) -> bool {
    let wanted = std::fs::read_to_string(requirements()).ok();
    venv.join("bin/python").exists()
        && wanted.is_some()
        && std::fs::read_to_string(venv.join(VENV_STAMP)).ok() == wanted
}

/// Marks `venv` as holding `wanted` (the requirements text installed).
pub fn stamp_venv(venv: &Path, wanted: &str) -> Result<(), String> {
    let stamp = venv.join(VENV_STAMP);
    std::fs::write(&stamp, wanted).map_err(|e| format!("{}: {e}", stamp.display()))
}

/// The reference Python (AgentScope 2.0.11, tzdata 2025.2):
/// `ENVAWARE_REF_PYTHON` (relative to the workspace root), else the
/// workspace's `.venv` once `cargo xtask test` has filled it. Never the
/// system's Python, which lacks AgentScope and the pinned tzdata.
pub fn reference_python() -> Result<PathBuf, String> {
    let root = workspace();
    if let Some(p) = std::env::var_os("ENVAWARE_REF_PYTHON") {
        let python = root.join(p);
        // Asked for by name: its absence is an error, never a skip.
        assert!(
            python.exists(),
            "ENVAWARE_REF_PYTHON names {}, which does not exist",
            python.display()
        );
        return Ok(python);
    }
    let venv = root.join(".venv");
    if venv_ready(&venv) {
        Ok(venv.join("bin/python"))
    } else {
        Err("no reference Python (AgentScope 2.0.11 in .venv, or ENVAWARE_REF_PYTHON)".into())
    }
}

/// The `envaware-sim` binary: `ENVAWARE_SIM`, else the one cargo built
/// beside the running test (`<target>/debug/deps/test` →
/// `<target>/debug/envaware-sim`), which a workspace-wide `cargo test`
/// builds.
pub fn sim_binary() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("ENVAWARE_SIM") {
        return Ok(workspace().join(p));
    }
    let exe = std::env::current_exe().map_err(|e| format!("the test's own path: {e}"))?;
    let beside = exe
        .parent()
        .and_then(Path::parent)
        .map(|dir| dir.join("envaware-sim"))
        .filter(|p| p.exists());
    beside.ok_or_else(|| {
        "no envaware-sim binary (`cargo build -p envaware-sim`, or ENVAWARE_SIM)".into()
    })
}

/// A program the tests run: the path in `var`, else `name` on the `PATH`
/// or in `~/.cargo/bin`; it must answer `--version`.
pub fn tool(var: &str, name: &str) -> Result<PathBuf, String> {
    let in_cargo_home =
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo/bin").join(name));
    let candidates = match std::env::var_os(var) {
        Some(p) => vec![PathBuf::from(p)],
        None => [Some(PathBuf::from(name)), in_cargo_home].into_iter().flatten().collect(),
    };
    candidates
        .into_iter()
        .find(|p| Command::new(p).arg("--version").output().is_ok_and(|o| o.status.success()))
        .ok_or_else(|| format!("no {name} (or set {var})"))
}

/// A file `cargo xtask test` builds: the path in `var`, else `default`
/// under the workspace root.
pub fn built_file(var: &str, default: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os(var).map_or_else(|| workspace().join(default), PathBuf::from);
    if path.exists() {
        Ok(path)
    } else {
        Err(format!("no {} (or set {var})", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_found_tool_is_returned() {
        assert_eq!(or_skip::<u8>(Ok(7)), Some(7));
    }

    #[test]
    fn a_venv_without_the_stamp_is_not_the_reference() {
        let dir = std::env::temp_dir().join(format!("envaware-needs-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::write(dir.join("bin/python"), "").unwrap();
        assert!(!venv_ready(&dir), "a bare venv");
        let wanted = std::fs::read_to_string(requirements()).unwrap();
        stamp_venv(&dir, "agentscope==0.0.1\n").unwrap();
        assert!(!venv_ready(&dir), "a venv stamped with other requirements");
        stamp_venv(&dir, &wanted).unwrap();
        assert!(venv_ready(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
