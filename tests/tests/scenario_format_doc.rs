//! `docs/scenario-format.md` is the scenario contract as the repository
//! ships it; `../shared/scenario-format.md`, beside the repository, is the
//! contract other tools are written against. The two must be byte-equal.
//!
//! The shared copy exists only in a checkout that sits in the project's
//! workspace; in a clone anywhere else (CI included) it is absent, and the
//! check skips with a line saying so, even under `cargo xtask test`: there
//! is nothing to install that would provide it.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The repository root: this crate lives in `tests/`.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the repository")
        .to_path_buf()
}

#[test]
fn the_scenario_format_doc_is_the_shared_contract() {
    let root = repository();
    let ours = root.join("docs/scenario-format.md");
    let shared = root.join("../shared/scenario-format.md");
    let doc = std::fs::read(&ours).unwrap_or_else(|e| panic!("{}: {e}", ours.display()));
    let contract = match std::fs::read(&shared) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Past the harness's capture, so a passing run shows what it
            // did not check.
            let line = format!(
                "skipped the_scenario_format_doc_is_the_shared_contract: {} is absent (a clone outside the project's \
                 workspace has no shared contract to compare docs/scenario-format.md with)\n",
                shared.display()
            );
            let _ = std::io::stderr().write_all(line.as_bytes());
            return;
        }
        Err(e) => panic!("{}: {e}", shared.display()),
    };
    if doc != contract {
        let first = doc
            .iter()
            .zip(&contract)
            .position(|(a, b)| a != b)
            .unwrap_or(doc.len().min(contract.len()));
        let line = 1 + doc[..first].iter().filter(|&&b| b == b'\n').count();
        panic!(
            "docs/scenario-format.md ({} bytes) differs from {} ({} bytes) from byte {first} (line {line}): \
             copy the shared contract over the repository's (`cp ../shared/scenario-format.md docs/`)",
            doc.len(),
            shared.display(),
            contract.len()
        );
    }
}
