//! The session's log (issue 21): the items `envaware::journal` writes, in
//! sequential-storage's queue (a CRC per item) over a [`NorFlash`] the board
//! provides. Under QEMU the board's "flash" is [`RamFlash`] over a RAM
//! region that survives `SCB::sys_reset` (docs/reboot.md says what that
//! models and what not).

use embassy_futures::block_on;
use embedded_storage_async::nor_flash::{ErrorType, MultiwriteNorFlash, NorFlash, ReadNorFlash};
use envaware::journal::{Journal, LogError};
use envaware::Timestamp;
use sequential_storage::cache::{Cache, Uncached};
use sequential_storage::queue::{QueueConfig, QueueStorage};

use crate::agent::Context;

/// A NOR flash of 4-byte words and 1 KiB pages (as the LM3S6965's) over
/// RAM: an erase sets a page's bytes to `0xFF`, a write can only clear bits.
#[derive(Debug)]
pub struct RamFlash<'a>(pub &'a mut [u8]);

/// An access outside the region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfBounds;

impl embedded_storage_async::nor_flash::NorFlashError for OutOfBounds {
    fn kind(&self) -> embedded_storage_async::nor_flash::NorFlashErrorKind {
        embedded_storage_async::nor_flash::NorFlashErrorKind::OutOfBounds
    }
}

impl RamFlash<'_> {
    fn range(&mut self, offset: u32, len: usize) -> Result<&mut [u8], OutOfBounds> {
        let start = offset as usize;
        self.0.get_mut(start..start.checked_add(len).ok_or(OutOfBounds)?).ok_or(OutOfBounds)
    }
}

impl ErrorType for RamFlash<'_> {
    type Error = OutOfBounds;
}

impl ReadNorFlash for RamFlash<'_> {
    const READ_SIZE: usize = 4;
    async fn read(&mut self, offset: u32, bytes: &mut [u8]) -> Result<(), OutOfBounds> {
        bytes.copy_from_slice(self.range(offset, bytes.len())?);
        Ok(())
    }
    fn capacity(&self) -> usize {
        self.0.len()
    }
}

impl NorFlash for RamFlash<'_> {
    const WRITE_SIZE: usize = 4;
    const ERASE_SIZE: usize = 1024;
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

// A NOR word can be written again as long as bits are only cleared.
impl MultiwriteNorFlash for RamFlash<'_> {}

/// The longest item read back.
pub const MAX_ITEM: usize = 1024;

/// What the log keeps free before each event or step: two pages, so that
/// a compaction's header and one step's items (which may straddle a page)
/// fit after it.
pub const RESERVE: u32 = 2 * 1024;

/// The log: sequential-storage's queue over `S`.
pub struct SessionLog<S: NorFlash> {
    queue: QueueStorage<S, Cache<Uncached, Uncached, Uncached>>,
}

impl<S: NorFlash> core::fmt::Debug for SessionLog<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SessionLog")
    }
}

/// Why the log could not be restored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RestoreError {
    /// The queue could not be read (its own damage, e.g. a region never erased).
    Storage,
    /// An item the journal refused.
    Item(LogError),
}

impl core::fmt::Display for RestoreError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RestoreError::Storage => f.write_str("the log's storage could not be read"),
            RestoreError::Item(e) => e.fmt(f),
        }
    }
}

impl<S: NorFlash> SessionLog<S> {
    /// The log over all of `flash`.
    pub fn new(flash: S) -> Self {
        let end = u32::try_from(flash.capacity()).unwrap_or(u32::MAX);
        SessionLog { queue: QueueStorage::new(flash, QueueConfig::new(0..end), Cache::new_uncached()) }
    }

    /// The flash under the log (the board dumps its bytes for the desktop).
    pub fn flash(&mut self) -> &mut S {
        self.queue.flash()
    }

    /// Appends one item; `false` when the log refused it (full, or damaged).
    pub fn append(&mut self, item: &[u8]) -> bool {
        block_on(self.queue.push(item, false)).is_ok()
    }

    /// Erases the log.
    pub fn clear(&mut self) -> bool {
        block_on(self.queue.erase_all()).is_ok()
    }

    /// Reads the log back into `context` (empty) through `journal`, in two
    /// passes (`Journal::check`, then `Journal::restore`). Returns the
    /// steps the session took before the reset (`Journal::steps`: also
    /// those a compaction popped). `before_step`
    /// sees the context and the log's clock just before each step item is
    /// applied, as the live session's step saw them.
    ///
    /// # Errors
    ///
    /// A log that cannot be read or that the journal refuses; `context` must
    /// then be started afresh.
    pub fn restore(
        &mut self,
        journal: &mut Journal<16>,
        context: &mut Context<'_>,
        buf: &mut [u8],
        scratch: &mut [u8],
        mut before_step: impl FnMut(&Context<'_>, Option<Timestamp>),
    ) -> Result<usize, RestoreError> {
        for pass in 0..2 {
            let mut items = block_on(self.queue.iter()).map_err(|_| RestoreError::Storage)?;
            while let Some(item) = block_on(items.next(buf)).map_err(|_| RestoreError::Storage)? {
                if pass == 0 {
                    journal.check(&item).map_err(RestoreError::Item)?;
                } else {
                    if is_step(&item) {
                        before_step(context, journal.clock());
                    }
                    journal.restore(context, &item, scratch).map_err(RestoreError::Item)?;
                }
            }
        }
        Ok(usize::try_from(journal.steps()).unwrap_or(usize::MAX))
    }
}

// Popping rewrites an item's header: a NOR flash whose words can be
// written again (bits only cleared).
impl<S: MultiwriteNorFlash> SessionLog<S> {
    /// Compacts the log when less than [`RESERVE`] is left (its region
    /// fills): appends the journal's compaction header, then pops the items
    /// the context no longer needs (docs/reboot.md, "Compaction"). A power
    /// cut in between leaves a log that restores the same context. Returns
    /// the items popped (0: no need, or none is dead yet); `buf` is scratch.
    ///
    /// # Errors
    ///
    /// When the queue cannot be read or written, or the header does not
    /// fit `buf`; the log is as it was, or compacted in part (it still
    /// restores).
    pub fn make_room(&mut self, journal: &mut Journal<16>, context: &Context<'_>, buf: &mut [u8]) -> Result<u32, RestoreError> {
        let dead = journal.dead_items();
        if dead == 0 || block_on(self.queue.space_left()).map_err(|_| RestoreError::Storage)? >= RESERVE {
            return Ok(0);
        }
        let n = journal.compaction_header(context, buf).map_err(|_| RestoreError::Storage)?;
        block_on(self.queue.push(&buf[..n], false)).map_err(|_| RestoreError::Storage)?;
        for _ in 0..dead {
            block_on(self.queue.pop(buf)).map_err(|_| RestoreError::Storage)?;
            journal.popped(1);
        }
        Ok(dead)
    }
}

/// Whether `item` (`{"#":n,"step":…}`) is a step.
fn is_step(item: &[u8]) -> bool {
    item.iter().position(|&b| b == b',').is_some_and(|comma| item[comma + 1..].starts_with(b"\"step\""))
}
