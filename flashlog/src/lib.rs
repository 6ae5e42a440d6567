//! The session log of an envaware device, once for the firmware, the
//! simulator and the power-cut tests: the items [`envaware::journal`]
//! writes, in sequential-storage's queue (a CRC per item) over a
//! [`NorFlash`], read back after a reset.
//!
//! - [`SessionLog`]: the log, with an async API (`append`, `clear`,
//!   `restore_session`, `make_room_for`, and `read_items` for a reader of
//!   its items); it is the [`ItemStore`](envaware::journal::ItemStore) an
//!   [`envaware::journal::Session`] appends to;
//! - the policy that makes room: [`SessionLog::make_room`] compacts the log
//!   when less than [`RESERVE`] is left;
//! - the flash's shape: [`PAGE`], [`WORD`], and the longest item,
//!   [`MAX_ITEM`];
//! - [`RamFlash`]: a NOR flash over RAM with sequential-storage's mock-flash
//!   semantics (the board's log under QEMU, the simulator's copy of an image);
//! - [`queue_region`]: the part of a flash image its queue is read over.
//!
//! ```
//! use envaware::journal::{Event, Session};
//! use envaware::{Config, Engine};
//! use envaware_flashlog::{RamFlash, SessionLog, MAX_ITEM};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # embassy_futures::block_on(async {
//! type Sprout<'e> = Session<'e, 8, 32, 2048>;
//! let engine = Engine::new(Config::default())?;
//! let mut region = [0xFF; 4 * 1024];
//! let mut log = SessionLog::new(RamFlash(&mut region[..]));
//! let (mut buf, mut scratch) = ([0u8; MAX_ITEM], [0u8; MAX_ITEM]);
//! let mut session = Sprout::new(&engine, "Sprout");
//! session.start(&mut buf, &mut log).await?;
//! session.record(&Event::User { name: "operator", text: "" }, &mut buf, &mut log).await?;
//!
//! // After a reset: the log is read back into an empty context.
//! let mut restored = Sprout::new(&engine, "Sprout");
//! log.restore_session(&mut restored, &mut buf, &mut scratch, |_, _| {}).await?;
//! assert_eq!((restored.context().len(), restored.journal().items()), (1, 2));
//! assert_eq!(restored.reply().next_iter, Some(0));
//! # Ok(())
//! # })
//! # }
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![deny(
    missing_docs,
    missing_debug_implementations,
    unused_qualifications,
    rustdoc::broken_intra_doc_links
)]

mod log;
mod ram_flash;

pub use self::log::{AppendError, Numbered, ReadError, RestoreError, SessionLog, StorageError};
pub use self::ram_flash::{RamFlash, RamFlashError};

#[cfg(doc)]
use embedded_storage_async::nor_flash::NorFlash;

/// The flash's page: the LM3S6965's flash erases 1 KiB at a time.
pub const PAGE: usize = 1024;

/// The flash's word: reads and writes are whole 4-byte words.
pub const WORD: usize = 4;

/// The longest item the log reads back (the buffers the device reads its
/// items into).
pub const MAX_ITEM: usize = 1024;

/// The part of a flash image (whole [`PAGE`]s) that its queue is read
/// over: the image without the erased pages (every byte `0xFF`) at its end.
///
/// sequential-storage's queue is circular over its whole region: it writes
/// its pages in turn and, past the last, wraps to the first. Reading, it
/// goes from the oldest page to the next and stops at the first erased one.
/// An image of the device's region padded with erased pages (a dump of the
/// whole flash, or of a larger region) puts those pages between the
/// region's last page and its first: a queue over all of it stops at them
/// and loses the pages written after the wrap, the newest. Erased pages
/// hold no item, and a queue wraps past its region's end only when its
/// last page is not erased: over the image without them, the queue reads
/// the device's items, and an image padded with any number of erased pages
/// reads the same.
///
/// ```
/// use envaware_flashlog::{queue_region, PAGE};
///
/// let mut image = vec![0xFF; 5 * PAGE];
/// image[PAGE] = 0; // page 1 holds something
/// assert_eq!(queue_region(&image).len(), 2 * PAGE);
/// assert!(queue_region(&image[..PAGE]).is_empty());
/// ```
pub fn queue_region(image: &[u8]) -> &[u8] {
    let pages = image.chunks(PAGE).rposition(|page| page.iter().any(|&b| b != 0xFF));
    let end = pages.map_or(0, |last| (last + 1) * PAGE).min(image.len());
    image.get(..end).unwrap_or_default()
}

/// What the log keeps free before each event or step: two pages, so that
/// a compaction's header and one step's items (which may straddle a page)
/// fit after it.
pub const RESERVE: u32 = 2 * PAGE as u32;
