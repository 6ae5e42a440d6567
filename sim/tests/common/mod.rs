//! What the sample-replaying tests share: the workspace and its samples.

use std::path::{Path, PathBuf};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("sim lives in the workspace")
        .to_path_buf()
}

/// The samples, each with its extra replay arguments.
pub fn samples() -> Vec<(PathBuf, Vec<&'static str>)> {
    let mut found: Vec<(PathBuf, Vec<&'static str>)> =
        std::fs::read_dir(workspace().join("examples"))
            .expect("read examples/")
            .map(|e| e.expect("dir entry").path())
            .filter_map(|p| {
                let name = p.file_name()?.to_str()?.to_string();
                if name.ends_with(".trace.jsonl") {
                    Some((p, vec![]))
                } else if name.ends_with(".agentstate.json") {
                    Some((p, vec!["--now", "2026-07-22T02:20:00Z"]))
                } else {
                    None
                }
            })
            .collect();
    found.sort();
    assert!(
        found.len() >= 3,
        "expected at least two traces and a dump under examples/, found {found:?}"
    );
    found
}
