//! `--follow`: a growing log (a file a device's log is appended to, or a
//! pipe), handed on in whole lines (or, for a host's log file, whole
//! records) as they are written.

use std::io::Read;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::ExportError;

/// Where the session comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A file.
    File(PathBuf),
    /// Standard input.
    Stdin,
}

impl Source {
    /// What the error messages call it.
    pub fn name(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Stdin => "standard input".into(),
        }
    }

    /// The whole source, read once.
    ///
    /// # Errors
    ///
    /// [`ExportError::Source`] when it cannot be read.
    pub fn read_all(&self) -> Result<Vec<u8>, ExportError> {
        let failed = |error| ExportError::Source { source: self.name(), error };
        match self {
            Source::File(p) => std::fs::read(p).map_err(failed),
            Source::Stdin => {
                let mut bytes = Vec::new();
                std::io::stdin().read_to_end(&mut bytes).map_err(failed)?;
                Ok(bytes)
            }
        }
    }
}

/// How often a file is looked at for new bytes: the floor of `--follow`'s
/// delay for a file (a pipe hands each line on as it comes).
pub const POLL: Duration = Duration::from_millis(20);

/// Reads `source` as it grows and calls `each(bytes, last)` with all the
/// bytes read so far up to the last complete line (a host's log file: its
/// last whole record), whenever a read completes one; and once at the end with every byte (`last`: a
/// final line without its newline included). The end is standard
/// input's end, or `idle` without a new byte (never, for a file, without
/// `idle`: it is followed until the process is stopped).
///
/// # Errors
///
/// What `each` returns, [`ExportError::Source`] when the source cannot be
/// read, [`ExportError::Shrunk`] when the file gets shorter (rewritten
/// from its start: another session).
pub fn follow(
    source: &Source,
    idle: Option<Duration>,
    mut each: impl FnMut(&[u8], bool) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let failed = |error| ExportError::Source { source: source.name(), error };
    let mut bytes = Vec::new();
    let mut handed = 0;
    let mut hand_on = |bytes: &[u8], handed: &mut usize| -> Result<(), ExportError> {
        // A host's log file grows by records, a trace by lines.
        let complete = match bytes.starts_with(&envaware_host::MAGIC) {
            true => envaware_host::read_records(bytes).map_or(0, |r| r.end),
            false => bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1),
        };
        if complete > *handed {
            *handed = complete;
            each(&bytes[..complete], false)?;
        }
        Ok(())
    };
    match source {
        Source::File(path) => {
            let mut file = std::fs::File::open(path).map_err(failed)?;
            let mut last_growth = Instant::now();
            loop {
                let before = bytes.len();
                file.read_to_end(&mut bytes).map_err(failed)?;
                if bytes.len() > before {
                    last_growth = Instant::now();
                    hand_on(&bytes, &mut handed)?;
                    continue;
                }
                let len = file.metadata().map_err(failed)?.len();
                if len < bytes.len() as u64 {
                    return Err(ExportError::Shrunk {
                        path: path.clone(),
                        read: bytes.len() as u64,
                        now: len,
                    });
                }
                if idle.is_some_and(|idle| last_growth.elapsed() >= idle) {
                    break;
                }
                // Polling: std has no portable way to wait for a file to grow.
                std::thread::sleep(POLL);
            }
        }
        Source::Stdin => {
            let (tx, rx) = mpsc::channel::<std::io::Result<Vec<u8>>>();
            std::thread::spawn(move || {
                let mut stdin = std::io::stdin().lock();
                let mut chunk = vec![0u8; 64 * 1024];
                loop {
                    match stdin.read(&mut chunk) {
                        Ok(0) => return,
                        Ok(n) => {
                            if tx.send(Ok(chunk[..n].to_vec())).is_err() {
                                return;
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    }
                }
            });
            loop {
                let next = match idle {
                    Some(idle) => rx.recv_timeout(idle),
                    None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
                };
                match next {
                    Ok(Ok(chunk)) => {
                        bytes.extend_from_slice(&chunk);
                        // What came meanwhile, at once: one hand-on for a burst.
                        while let Ok(Ok(more)) = rx.try_recv() {
                            bytes.extend_from_slice(&more);
                        }
                        hand_on(&bytes, &mut handed)?;
                    }
                    Ok(Err(e)) => return Err(failed(e)),
                    Err(_) => break,
                }
            }
        }
    }
    each(&bytes, true)
}
