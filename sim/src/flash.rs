//! A device's session log read from a raw image of its flash region: the
//! queue sequential-storage keeps there (the firmware's log,
//! `envaware_flashlog`: 1 KiB pages of 4-byte words, a CRC per item), its
//! items in order ([`items`]), which [`crate::device_log`] turns into the
//! replay's trace lines.

use embassy_futures::block_on;
use envaware::journal::{ItemReader, LogError};
use envaware_flashlog::{queue_region, RamFlashError, ReadError, SessionLog, MAX_ITEM};

/// The firmware's page and its RAM flash (the image is read through a
/// copy: reading a queue may write, as sequential-storage's iterator erases
/// a page whose items were all popped, and re-erases one it finds
/// half-erased; never to the file).
pub use envaware_flashlog::{RamFlash, PAGE};

/// Why an image is not a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlashError {
    /// The image is not a whole number of pages (at least one): its size.
    Size(usize),
    /// The queue could not be read.
    Queue {
        /// Items read before.
        items: usize,
        /// sequential-storage's error.
        error: String,
    },
    /// An item the journal's reader of items refuses
    /// ([`envaware::journal::ItemReader`]: an unknown kind, too short, an
    /// item of the text form of format versions 1 and 2, or a gap in the
    /// numbers: an item between was lost, its CRC failed and the queue
    /// skipped it). `index` counts the items read, from 0.
    Item(LogError),
}

impl std::fmt::Display for FlashError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlashError::Size(n) => write!(f, "a flash image of {n} bytes: expected a whole number of {PAGE}-byte pages, at least 1"),
            FlashError::Queue { items, error } => write!(f, "the flash image's queue cannot be read after {items} items: {error}"),
            FlashError::Item(LogError { index, kind }) => {
                write!(f, "the flash image's item {index}: {kind}")
            }
        }
    }
}

impl std::error::Error for FlashError {}

/// The log's items in `image`, oldest first.
///
/// The queue is read over the image without its trailing erased pages
/// ([`envaware_flashlog::queue_region`]), so an image padded with erased
/// pages reads the same items as the device's region alone. Each item is
/// read by the journal's own reader of items ([`ItemReader`], what
/// `Journal::check` runs on the device).
///
/// # Errors
///
/// An image that is not whole pages, a queue that cannot be read, an item
/// the reader refuses.
pub fn items(image: &[u8]) -> Result<Vec<Vec<u8>>, FlashError> {
    if image.is_empty() || !image.len().is_multiple_of(PAGE) {
        return Err(FlashError::Size(image.len()));
    }
    let region = queue_region(image);
    if region.is_empty() {
        return Ok(Vec::new()); // all erased: an empty log
    }
    match read_queue(region.to_vec()) {
        // Every page of the region closed, none being written and none
        // erased (a power cut between the queue closing its newest page and
        // opening the next leaves that): the queue finds no page to go on
        // from. Over one more erased page, as the device's region had when
        // it left erased pages, it reads them from the first.
        Err(ReadError::Storage { error: sequential_storage::Error::Corrupted { .. }, .. }) => {
            let mut wider = region.to_vec();
            wider.resize(region.len() + PAGE, 0xFF);
            read_queue(wider)
        }
        read => read,
    }
    .map_err(|e| match e {
        ReadError::Storage { items, error } => {
            FlashError::Queue { items, error: format!("{error:?}") }
        }
        ReadError::Stopped(e) => e,
    })
}

/// The items of the queue over all of `region`.
fn read_queue(region: Vec<u8>) -> Result<Vec<Vec<u8>>, ReadError<RamFlashError, FlashError>> {
    let mut log = SessionLog::new(RamFlash(region));
    let mut buf = vec![0u8; MAX_ITEM];
    let mut reader = ItemReader::new();
    let mut items = Vec::new();
    block_on(log.read_items(&mut buf, |item| {
        reader.read(item).map_err(FlashError::Item)?;
        items.push(item.to_vec());
        Ok(())
    }))?;
    Ok(items)
}
