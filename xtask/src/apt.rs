//! Debian packages the tasks install when a tool is missing (as root): the
//! package lists refreshed, the package installed without prompting, and
//! the apt lock another install holds waited for rather than failed on.

use std::process::Command;
use std::time::Duration;

/// How long apt waits for another apt or dpkg to let go of its lock.
const LOCK_WAIT: &str = "DPkg::Lock::Timeout=600";

/// Tries of `apt-get update`: it takes the lists' lock, which the option
/// above does not always cover; a busy lock fails it at once.
const UPDATE_TRIES: u32 = 5;

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn has_apt() -> bool {
    Command::new("apt-get").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Runs a command, echoing it; its exit status, or why it did not start.
fn run(what: &str, cmd: &mut Command) -> Result<bool, String> {
    eprintln!("==> {what}");
    cmd.status().map(|s| s.success()).map_err(|e| format!("{what}: cannot start: {e}"))
}

/// Installs `package` with `apt-get install -y FLAGS` (the lists refreshed
/// first), as root.
///
/// # Errors
///
/// Not root or no apt-get (the message is the command to run), or apt
/// failed.
pub fn install(package: &str, flags: &[&str]) -> Result<(), String> {
    let fix = format!(
        "apt-get update && apt-get install -y {}{package}",
        flags.iter().map(|f| format!("{f} ")).collect::<String>()
    );
    if !is_root() || !has_apt() {
        return Err(format!(
            "{package} is missing: run `sudo {fix}` (or your distribution's equivalent)"
        ));
    }
    let mut updated = false;
    for attempt in 1..=UPDATE_TRIES {
        let mut update = Command::new("apt-get");
        update.args(["-o", LOCK_WAIT, "update"]);
        if run(&format!("apt-get update (try {attempt} of {UPDATE_TRIES})"), &mut update)? {
            updated = true;
            break;
        }
        std::thread::sleep(Duration::from_secs(10));
    }
    if !updated {
        return Err(format!("apt-get update failed {UPDATE_TRIES} times: run `{fix}`"));
    }
    let mut cmd = Command::new("apt-get");
    cmd.args(["-o", LOCK_WAIT, "install", "-y"])
        .args(flags)
        .arg(package)
        .env("DEBIAN_FRONTEND", "noninteractive");
    match run(&format!("apt-get install {package}"), &mut cmd)? {
        true => Ok(()),
        false => Err(format!("apt-get install {package} failed: run `{fix}`")),
    }
}
