//! Headless Chromium, as the tests and `cargo xtask` run it: found
//! ([`find`]), run on a page bounded in time ([`run`]), and the page's
//! picture ([`screenshot`]) or DOM ([`dump_dom`]). One runner for the
//! timeline's, the fleet view's and Phoenix's checks.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::needs;

/// Chromium: `ENVAWARE_CHROMIUM`, else `chromium` or `chromium-browser`
/// on the path (`cargo xtask test` installs it from Debian's packages).
pub fn find() -> Result<PathBuf, String> {
    needs::tool("ENVAWARE_CHROMIUM", "chromium")
        .or_else(|e| needs::tool("ENVAWARE_CHROMIUM", "chromium-browser").map_err(|_| e))
}

/// Runs headless Chromium on `url` with `args` (its own throwaway
/// profile, off the network but for 127.0.0.1), bounded to 120 s; its
/// standard output. An error when it cannot start, does not finish in
/// time, or fails (with its standard error).
pub fn run(chromium: &Path, args: &[String], url: &str, profile: &Path) -> Result<Vec<u8>, String> {
    let _ = std::fs::remove_dir_all(profile);
    let child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", chromium.display()))?;
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(out) => out.map_err(|e| e.to_string())?,
        Err(_) => {
            // Only the child started here, by its id.
            let _ = Command::new("kill").arg(id.to_string()).status();
            return Err(format!("chromium did not finish within 120 s on {url}"));
        }
    };
    let _ = std::fs::remove_dir_all(profile);
    if !out.status.success() {
        return Err(format!(
            "chromium on {url} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(out.stdout)
}

fn page_args((width, height): (u32, u32), budget: Duration) -> Vec<String> {
    // The virtual time budget lets the page's scripts fetch and render.
    vec![
        format!("--window-size={width},{height}"),
        format!("--virtual-time-budget={}", budget.as_millis()),
    ]
}

/// Headless Chromium's picture of `url` in a `size` window, after
/// `budget` of the page's time.
pub fn screenshot(
    chromium: &Path,
    url: &str,
    png: &Path,
    size: (u32, u32),
    budget: Duration,
) -> Result<(), String> {
    let mut args = page_args(size, budget);
    args.push(format!("--screenshot={}", png.display()));
    run(chromium, &args, url, &png.with_extension("chromium-profile"))?;
    if png.exists() {
        Ok(())
    } else {
        Err(format!("chromium wrote no {}", png.display()))
    }
}

/// The page's DOM as Chromium rendered it (`--dump-dom`), after `budget`
/// of the page's time.
pub fn dump_dom(
    chromium: &Path,
    url: &str,
    size: (u32, u32),
    budget: Duration,
) -> Result<String, String> {
    let mut args = page_args(size, budget);
    args.push("--dump-dom".into());
    let profile = std::env::temp_dir().join(format!("envaware-dom-{}", std::process::id()));
    run(chromium, &args, url, &profile).map(|out| String::from_utf8_lossy(&out).into_owned())
}
