//! A device's session log read from a raw image of its flash region: the
//! queue sequential-storage keeps there (`firmware/src/log.rs`: 1 KiB
//! pages of 4-byte words, a CRC per item), its items in order, one JSON
//! line each, as `replay` reads a log dumped item by item.

use embassy_futures::block_on;
use embedded_storage_async::nor_flash::{ErrorType, MultiwriteNorFlash, NorFlash, NorFlashError, NorFlashErrorKind, ReadNorFlash};
use sequential_storage::cache::Cache;
use sequential_storage::queue::{QueueConfig, QueueStorage};

/// The firmware's page: the LM3S6965's flash erases 1 KiB at a time.
pub const PAGE: usize = 1024;

/// The longest item the firmware writes (`firmware/src/log.rs`, `MAX_ITEM`).
const MAX_ITEM: usize = 1024;

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

/// A NOR flash of 4-byte words and [`PAGE`]-byte pages over RAM, as the
/// firmware's (an erase sets `0xFF`, a write only clears bits). The image
/// is read through a copy: reading a queue may write (sequential-storage's
/// iterator erases a page whose items were all popped, and re-erases one it
/// finds half-erased), never to the file.
#[derive(Debug, Clone)]
pub struct RamFlash(pub Vec<u8>);

/// An access outside the region.
#[derive(Debug)]
pub struct OutOfBounds;

impl NorFlashError for OutOfBounds {
    fn kind(&self) -> NorFlashErrorKind {
        NorFlashErrorKind::OutOfBounds
    }
}

impl RamFlash {
    fn range(&mut self, offset: u32, len: usize) -> Result<&mut [u8], OutOfBounds> {
        let start = offset as usize;
        self.0.get_mut(start..start.checked_add(len).ok_or(OutOfBounds)?).ok_or(OutOfBounds)
    }
}

impl ErrorType for RamFlash {
    type Error = OutOfBounds;
}

impl ReadNorFlash for RamFlash {
    const READ_SIZE: usize = 4;
    async fn read(&mut self, offset: u32, bytes: &mut [u8]) -> Result<(), OutOfBounds> {
        bytes.copy_from_slice(self.range(offset, bytes.len())?);
        Ok(())
    }
    fn capacity(&self) -> usize {
        self.0.len()
    }
}

impl NorFlash for RamFlash {
    const WRITE_SIZE: usize = 4;
    const ERASE_SIZE: usize = PAGE;
    async fn erase(&mut self, from: u32, to: u32) -> Result<(), OutOfBounds> {
        self.range(from, (to as usize).saturating_sub(from as usize))?.fill(0xFF);
        Ok(())
    }
    async fn write(&mut self, offset: u32, bytes: &[u8]) -> Result<(), OutOfBounds> {
        for (cell, byte) in self.range(offset, bytes.len())?.iter_mut().zip(bytes) {
            *cell &= *byte;
        }
        Ok(())
    }
}

// A word can be written again as long as bits are only cleared.
impl MultiwriteNorFlash for RamFlash {}

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
    let end = u32::try_from(image.len()).map_err(|_| FlashError::Size(image.len()))?;
    let mut queue = QueueStorage::new(RamFlash(image.to_vec()), QueueConfig::new(0..end), Cache::new_uncached());
    let mut lines = String::new();
    let mut buf = vec![0u8; MAX_ITEM];
    let mut items = block_on(queue.iter()).map_err(|e| FlashError::Queue { items: 0, error: format!("{e:?}") })?;
    let (mut index, mut expected) = (0, None);
    while let Some(item) = block_on(items.next(&mut buf)).map_err(|e| FlashError::Queue { items: index, error: format!("{e:?}") })? {
        let text = std::str::from_utf8(&item).map_err(|_| FlashError::NotUtf8 { index })?;
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
    }
    Ok(lines)
}

/// The item's number: `{"#":12,…`.
fn number(item: &str) -> Option<u64> {
    let rest = item.strip_prefix("{\"#\":")?;
    rest[..rest.find(|c: char| !c.is_ascii_digit())?].parse().ok()
}
