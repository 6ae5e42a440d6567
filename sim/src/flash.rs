//! A device's session log read from a raw image of its flash region: the
//! queue sequential-storage keeps there (the firmware's log,
//! `envaware_flashlog`: 1 KiB pages of 4-byte words, a CRC per item), its
//! items in order, one JSON line each, as `replay` reads a log dumped item
//! by item.

use embassy_futures::block_on;
use envaware_flashlog::{ReadError, SessionLog, MAX_ITEM};

/// The firmware's page and its RAM flash (the image is read through a
/// copy: reading a queue may write, as sequential-storage's iterator erases
/// a page whose items were all popped, and re-erases one it finds
/// half-erased; never to the file).
pub use envaware_flashlog::{RamFlash, PAGE};

/// Why an image is not a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlashError {
    /// The image is not a whole number of pages (at least two).
    Size(usize),
    /// The queue could not be read.
    Queue {
        /// Items read before.
        items: usize,
        /// sequential-storage's error.
        error: String,
    },
    /// An item is not UTF-8.
    NotUtf8 {
        /// The item, from 0.
        index: usize,
    },
    /// An item is not numbered the one after the item before it: an item
    /// between was lost (its CRC failed and the queue skipped it), or it is
    /// not a log item.
    Gap {
        /// The item, from 0.
        index: usize,
        /// The number that follows the item before it.
        expected: Option<u64>,
        /// Its number (`None`: none).
        found: Option<u64>,
    },
}

impl std::fmt::Display for FlashError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlashError::Size(n) => write!(f, "a flash image of {n} bytes: expected a whole number of {PAGE}-byte pages, at least 2"),
            FlashError::Queue { items, error } => write!(f, "the flash image's queue cannot be read after {items} items: {error}"),
            FlashError::NotUtf8 { index } => write!(f, "the flash image's item {index} is not UTF-8"),
            FlashError::Gap { index, expected, found: None } => {
                write!(f, "the flash image's item {index} is not a log item (`{{\"#\": n, …}}`, n = {expected:?})")
            }
            FlashError::Gap { index, expected, found: Some(found) } => match expected {
                Some(expected) => {
                    write!(f, "the flash image's item {index} is numbered {found}, not {expected}: an item before it is lost")
                }
                None => write!(f, "the flash image's item {index} is numbered {found}"),
            },
        }
    }
}

impl std::error::Error for FlashError {}

/// The log's items in `image`, oldest first, one per line.
///
/// # Errors
///
/// An image of the wrong size, a queue that cannot be read, an item that
/// is not UTF-8.
pub fn log_lines(image: &[u8]) -> Result<String, FlashError> {
    if !image.len().is_multiple_of(PAGE) || image.len() < 2 * PAGE {
        return Err(FlashError::Size(image.len()));
    }
    let mut log = SessionLog::new(RamFlash(image.to_vec()));
    let mut lines = String::new();
    let mut buf = vec![0u8; MAX_ITEM];
    let (mut index, mut expected) = (0, None);
    let read = log.read_items(&mut buf, |item| {
        let text = std::str::from_utf8(item).map_err(|_| FlashError::NotUtf8 { index })?;
        // The journal numbers its items one after the other, also across a
        // compaction (it pops from the front): a gap is a lost item.
        let found = number(text);
        if found.is_none() || (expected.is_some() && found != expected) {
            return Err(FlashError::Gap { index, expected, found });
        }
        expected = found.map(|n| n + 1);
        lines.push_str(text);
        lines.push('\n');
        index += 1;
        Ok(())
    });
    block_on(read).map_err(|e| match e {
        ReadError::Storage { items, error } => {
            FlashError::Queue { items, error: format!("{error:?}") }
        }
        ReadError::Stopped(e) => e,
    })?;
    Ok(lines)
}

/// The item's number: `{"#":12,…`.
fn number(item: &str) -> Option<u64> {
    let rest = item.strip_prefix("{\"#\":")?;
    rest[..rest.find(|c: char| !c.is_ascii_digit())?].parse().ok()
}
