//! `cargo xtask nopanic`: proves that no panic is reachable in the core.
//!
//! Builds `tests/nopanic-check/` (every public entry point of the core on
//! black-boxed inputs) for thumbv7m-none-eabi in release, then lists every
//! `core::panic::Location` left in the image: after LTO only the panics
//! some input can reach keep theirs. It fails on any site in envaware's own
//! code (or the check program's) and on any dependency site whose file is
//! not in `tests/nopanic-check/allowed-panics.txt`, where each file has its
//! reason. `--link` builds the literal proof instead: a panic handler that
//! calls an undefined symbol, so the link fails if any panic is reachable.

use std::collections::BTreeMap;
use std::path::Path;

use crate::{cargo, root, run};

const TARGET: &str = "thumbv7m-none-eabi";

/// A panic site found in the image.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Site {
    file: String,
    line: u32,
    column: u32,
}

/// `cargo xtask nopanic [--link] [--demo-panic]`.
pub fn nopanic(args: &[String]) -> Result<(), String> {
    let (mut link, mut demo) = (false, false);
    for arg in args {
        match arg.as_str() {
            "--link" => link = true,
            "--demo-panic" => demo = true,
            other => {
                return Err(format!(
                    "unknown nopanic argument {other:?} (known: --link, --demo-panic)"
                ))
            }
        }
    }
    let dir = root().join("tests/nopanic-check");
    let features: Vec<&str> =
        [link.then_some("link"), demo.then_some("demo-panic")].into_iter().flatten().collect();
    let target_dir = root().join("target/nopanic-check");
    run(
        &format!(
            "build the no-panic program for {TARGET}{}",
            if link { " (panic handler: an undefined symbol)" } else { "" }
        ),
        cargo()
            .args([
                "build",
                "--locked",
                "--release",
                "--target",
                TARGET,
                "--features",
                &features.join(","),
                "--manifest-path",
            ])
            .arg(dir.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", &target_dir),
    )?;
    if link {
        println!("no-panic: linked with the undefined panic symbol: no panic is reachable");
        return Ok(());
    }
    let image = target_dir.join(TARGET).join("release/nopanic-check");
    let bytes = std::fs::read(&image).map_err(|e| format!("{}: {e}", image.display()))?;
    let sites = panic_sites(&bytes)
        .ok_or_else(|| format!("{}: not a 32-bit little-endian ELF", image.display()))?;
    let allowed = read_allow_list(&dir.join("allowed-panics.txt"))?;
    check(&sites, &allowed, &root())
}

/// Reads `file  # reason` lines; every file must give its reason.
fn read_allow_list(path: &Path) -> Result<BTreeMap<String, String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut allowed = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (file, reason) = line.split_once('#').ok_or(format!(
            "{}:{}: `file  # reason` expected",
            path.display(),
            n + 1
        ))?;
        allowed.insert(file.trim().to_string(), reason.trim().to_string());
    }
    Ok(allowed)
}

/// Where a panic site's file lives: `Ok(dependency path)` such as
/// `chrono/src/naive/date/mod.rs` or `core/src/fmt/float.rs`, or
/// `Err(path)` for envaware's own code and the check program.
fn classify(file: &str, root: &Path) -> Result<String, String> {
    // The standard library: `/rustc/HASH/library/...`, or rust-src's copy.
    if file.starts_with("/rustc/") || file.contains("/rustlib/src/rust/library/") {
        if let Some((_, rest)) = file.split_once("/library/") {
            return Ok(rest.to_string());
        }
    }
    if let Some((_, rest)) = file.split_once("/registry/src/") {
        // index.crates.io-HASH/NAME-VERSION/path
        let mut parts = rest.splitn(3, '/');
        let (_, krate, path) =
            (parts.next(), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let name = krate.rsplit_once('-').map_or(krate, |(name, _version)| name);
        return Ok(format!("{name}/{path}"));
    }
    let own = Path::new(file);
    if own.is_relative() || own.starts_with(root) {
        return Err(file.to_string());
    }
    Ok(file.to_string())
}

fn check(sites: &[Site], allowed: &BTreeMap<String, String>, root: &Path) -> Result<(), String> {
    let mut by_file: BTreeMap<String, Vec<&Site>> = BTreeMap::new();
    let mut failures = Vec::new();
    for site in sites {
        match classify(&site.file, root) {
            Ok(dep) if allowed.contains_key(&dep) => by_file.entry(dep).or_default().push(site),
            Ok(dep) => failures.push(format!(
                "reachable panic in a dependency, not in allowed-panics.txt: {dep}:{}:{}",
                site.line, site.column
            )),
            Err(own) => {
                let own_path = Path::new(&own);
                let shown = match own_path.strip_prefix(root) {
                    Ok(p) => p.display().to_string(),
                    // The check program's own files are relative to its crate.
                    Err(_) => Path::new("tests/nopanic-check").join(own_path).display().to_string(),
                };
                failures.push(format!("reachable panic: {shown}:{}:{}", site.line, site.column));
            }
        }
    }
    println!("no-panic: {} reachable panic sites in the image", sites.len());
    for (file, found) in &by_file {
        println!("  {:>3}  {file}: {}", found.len(), allowed[file]);
    }
    let unused: Vec<&String> = allowed.keys().filter(|f| !by_file.contains_key(*f)).collect();
    if !unused.is_empty() {
        println!(
            "  (allowed but not found: {})",
            unused.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        );
    }
    if failures.is_empty() {
        println!("no-panic: all in allowed dependency files; none in envaware's code");
        Ok(())
    } else {
        for f in &failures {
            println!("{f}");
        }
        Err(format!(
            "{} reachable panic site(s) outside the allowed dependency files",
            failures.len()
        ))
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Every `core::panic::Location` in the loaded data of a 32-bit ELF: four
/// words `file.ptr, file.len, line, column`, whose file is a `.rs` path in
/// the image.
fn panic_sites(elf: &[u8]) -> Option<Vec<Site>> {
    // ELFCLASS32, little-endian.
    if elf.get(..6)? != b"\x7fELF\x01\x01" {
        return None;
    }
    let shoff = u32_at(elf, 0x20)? as usize;
    let shentsize = u16_at(elf, 0x2e)? as usize;
    let shnum = u16_at(elf, 0x30)? as usize;
    // (address, file offset, size) of each allocated section with contents.
    let mut sections = Vec::new();
    for i in 0..shnum {
        let h = shoff + i * shentsize;
        let (kind, flags, addr, offset, size) = (
            u32_at(elf, h + 4)?,
            u32_at(elf, h + 8)?,
            u32_at(elf, h + 12)?,
            u32_at(elf, h + 16)?,
            u32_at(elf, h + 20)?,
        );
        const PROGBITS: u32 = 1;
        const ALLOC: u32 = 2;
        if kind == PROGBITS && flags & ALLOC != 0 {
            sections.push((addr as usize, offset as usize, size as usize));
        }
    }
    let read = |addr: usize, len: usize| -> Option<&[u8]> {
        let &(start, offset, size) = sections
            .iter()
            .find(|&&(start, _, size)| addr >= start && addr + len <= start + size)?;
        let _ = size;
        elf.get(offset + (addr - start)..offset + (addr - start) + len)
    };
    let mut sites = Vec::new();
    for &(_, offset, size) in &sections {
        let mut at = offset;
        while at + 16 <= offset + size {
            let (ptr, len, line, column) = (
                u32_at(elf, at)?,
                u32_at(elf, at + 4)?,
                u32_at(elf, at + 8)?,
                u32_at(elf, at + 12)?,
            );
            let plausible = (4..512).contains(&len)
                && (1..1_000_000).contains(&line)
                && (1..10_000).contains(&column);
            let file = plausible
                .then(|| read(ptr as usize, len as usize))
                .flatten()
                .and_then(|b| std::str::from_utf8(b).ok());
            match file {
                Some(file) if file.ends_with(".rs") && !file.contains('\0') => {
                    sites.push(Site { file: file.to_string(), line, column });
                    at += 16;
                }
                _ => at += 4,
            }
        }
    }
    sites.sort();
    sites.dedup();
    Some(sites)
}
