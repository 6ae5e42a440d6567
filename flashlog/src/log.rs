//! The log: sequential-storage's queue over a [`NorFlash`], and the policy
//! that makes room in it.

use embedded_storage_async::nor_flash::{MultiwriteNorFlash, NorFlash};
use envaware::journal::{ItemKind, ItemReader, ItemStore, Journal, LogError, Restore, Session};
use envaware::{AgentContext, Timestamp};
use sequential_storage::cache::{Cache, Uncached};
use sequential_storage::queue::{QueueConfig, QueueStorage};

use crate::RESERVE;

/// The queue could not be read or written: the flash failed, or the queue
/// found it damaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StorageError;

impl core::fmt::Display for StorageError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("the log's storage could not be read or written")
    }
}

impl core::error::Error for StorageError {}

/// Why the log refused an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AppendError {
    /// The log's region has no room for it.
    Full,
    /// The queue could not be read or written.
    Storage,
}

impl core::fmt::Display for AppendError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            AppendError::Full => "the log's region is full",
            AppendError::Storage => "the log's storage could not be read or written",
        })
    }
}

impl core::error::Error for AppendError {}

/// Why the log could not be restored (or compacted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RestoreError {
    /// The queue could not be read (its own damage, e.g. a region never
    /// erased), or written; or a compaction's header did not fit its buffer.
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

impl core::error::Error for RestoreError {}

impl<F> From<ReadError<F, LogError>> for RestoreError {
    fn from(e: ReadError<F, LogError>) -> Self {
        match e {
            ReadError::Storage { .. } => RestoreError::Storage,
            ReadError::Stopped(e) => RestoreError::Item(e),
        }
    }
}

/// Why [`SessionLog::read_items`] did not read to the end.
#[derive(Debug)]
pub enum ReadError<F, E> {
    /// The queue could not be read after `items` items.
    Storage {
        /// Items read before.
        items: usize,
        /// sequential-storage's error.
        error: sequential_storage::Error<F>,
    },
    /// The caller stopped at an item.
    Stopped(E),
}

/// The log: sequential-storage's queue over all of `S`, with no cache (a
/// new log over the same flash is the same log).
pub struct SessionLog<S: NorFlash> {
    queue: QueueStorage<S, Cache<Uncached, Uncached, Uncached>>,
    /// The outbox, when the log publishes its items
    /// ([`with_outbox`](SessionLog::with_outbox)).
    outbox: Option<Outbox>,
}

/// A log that publishes its items: where delivery stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Outbox {
    /// The first item number not yet delivered.
    delivered: u32,
    /// Items dropped before they were delivered (the region was full of
    /// them), since the log was opened.
    lost: u32,
    /// The numbers dropped and not yet reported, `from..to`.
    unreported: Option<(u32, u32)>,
}

/// Where item `number` is, for the outbox ([`SessionLog::read_item`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Numbered {
    /// In the buffer: its length.
    Found(usize),
    /// Not written yet (the log's next number is `next`).
    NotYet {
        /// The number the next item gets.
        next: u32,
    },
    /// Popped: the oldest item the log holds is `first`.
    Gone {
        /// The oldest item's number.
        first: u32,
    },
}

impl<S: NorFlash> core::fmt::Debug for SessionLog<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SessionLog")
    }
}

impl<S: NorFlash> SessionLog<S> {
    /// The log over all of `flash`.
    pub fn new(flash: S) -> Self {
        let end = u32::try_from(flash.capacity()).unwrap_or(u32::MAX);
        SessionLog {
            queue: QueueStorage::new(flash, QueueConfig::new(0..end), Cache::new_uncached()),
            outbox: None,
        }
    }

    /// The log over all of `flash`, as an outbox: its items are published
    /// (an MQTT uplink reads them with [`read_item`](Self::read_item) and
    /// says how far they were delivered with
    /// [`set_delivered`](Self::set_delivered)). Each step item carries the
    /// mark when it moved, so that a restored log resumes from it; a
    /// compaction pops only delivered items, unless the region is full of
    /// undelivered ones: then the oldest are dropped and counted
    /// ([`lost`](Self::lost)), as the agent's steps come first.
    pub fn with_outbox(flash: S) -> Self {
        SessionLog { outbox: Some(Outbox::default()), ..SessionLog::new(flash) }
    }

    /// The first item number not yet delivered (`None`: not an outbox).
    pub fn delivered(&self) -> Option<u32> {
        self.outbox.map(|o| o.delivered)
    }

    /// Items up to `next` (not included) were delivered. A mark never
    /// moves back.
    pub fn set_delivered(&mut self, next: u32) {
        if let Some(o) = self.outbox.as_mut() {
            o.delivered = o.delivered.max(next);
        }
    }

    /// Items dropped before they were delivered, since the log was opened.
    pub fn lost(&self) -> u32 {
        self.outbox.map_or(0, |o| o.lost)
    }

    /// The numbers dropped undelivered since the last call (`from..to`), to
    /// report (an uplink publishes them, so that the fleet counts them lost
    /// rather than wait for them).
    pub fn take_lost(&mut self) -> Option<(u32, u32)> {
        self.outbox.as_mut().and_then(|o| o.unreported.take())
    }

    /// Copies item `number` into `buf` (at least its length: at most
    /// [`MAX_ITEM`](crate::MAX_ITEM)). The numbers are counted from the
    /// log's first header (its whole number), so a log without one finds
    /// nothing.
    ///
    /// # Errors
    ///
    /// When the queue cannot be read, or the item does not fit `buf`.
    pub async fn read_item(
        &mut self,
        number: u32,
        buf: &mut [u8],
    ) -> Result<Numbered, StorageError> {
        // The first pass numbers the items (from the first header), the
        // second copies the one asked for.
        let mut reader = ItemReader::new();
        let mut count = 0u32;
        let mut first = None;
        let _ = self
            .read_items(buf, |item| {
                count += 1;
                let head = reader.read(item).map_err(drop)?;
                if head.kind == ItemKind::Header && first.is_none() {
                    first = reader.first_number();
                }
                Ok::<(), ()>(())
            })
            .await
            .map_err(|e| match e {
                ReadError::Storage { .. } => StorageError,
                ReadError::Stopped(()) => StorageError,
            })?;
        let Some(first) = first else { return Ok(Numbered::NotYet { next: 0 }) };
        let next = first.wrapping_add(count);
        if number < first {
            return Ok(Numbered::Gone { first });
        }
        if number >= next {
            return Ok(Numbered::NotYet { next });
        }
        let at = number - first;
        let mut index = 0u32;
        let mut len = None;
        let mut items = self.queue.iter().await.map_err(|_| StorageError)?;
        while let Some(item) = items.next(buf).await.map_err(|_| StorageError)? {
            if index == at {
                len = Some(item.len());
                break;
            }
            index += 1;
        }
        len.map(Numbered::Found).ok_or(StorageError)
    }

    /// The flash under the log (the board dumps its bytes for the desktop).
    pub fn flash(&mut self) -> &mut S {
        self.queue.flash()
    }

    /// Appends one item.
    ///
    /// # Errors
    ///
    /// When the region has no room for it, or the queue cannot be written.
    pub async fn append(&mut self, item: &[u8]) -> Result<(), AppendError> {
        self.queue.push(item, false).await.map_err(|e| match e {
            sequential_storage::Error::FullStorage => AppendError::Full,
            _ => AppendError::Storage,
        })
    }

    /// Erases the log.
    ///
    /// # Errors
    ///
    /// When the flash cannot be erased.
    pub async fn clear(&mut self) -> Result<(), StorageError> {
        self.queue.erase_all().await.map_err(|_| StorageError)
    }

    /// Reads the log's items, oldest first, each into `buf` (at least
    /// [`MAX_ITEM`](crate::MAX_ITEM) bytes) and hands it to `each`, until
    /// `each` stops. Returns the items read. Reading may write: the queue
    /// erases a page whose items were all popped.
    ///
    /// # Errors
    ///
    /// When the queue cannot be read, or `each` stops.
    pub async fn read_items<E>(
        &mut self,
        buf: &mut [u8],
        mut each: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<usize, ReadError<S::Error, E>> {
        let mut items =
            self.queue.iter().await.map_err(|error| ReadError::Storage { items: 0, error })?;
        let mut read = 0;
        while let Some(item) =
            items.next(buf).await.map_err(|error| ReadError::Storage { items: read, error })?
        {
            each(&item).map_err(ReadError::Stopped)?;
            read += 1;
        }
        Ok(read)
    }

    /// Reads the log back into `context` (empty) through `journal`, in two
    /// passes (`Journal::check`, then `Journal::restore`). Returns the
    /// steps the session took before the reset (`Journal::steps`: also
    /// those a compaction popped). `scratch` holds each step's hint as it
    /// is rendered again (as long as the longest hint).
    ///
    /// # Errors
    ///
    /// A log that cannot be read or that the journal refuses; `context` must
    /// then be started afresh.
    pub async fn restore<'e, const M: usize, const B: usize, const T: usize>(
        &mut self,
        journal: &mut Journal<M>,
        context: &mut AgentContext<'e, M, B, T>,
        buf: &mut [u8],
        scratch: &mut [u8],
    ) -> Result<usize, RestoreError> {
        self.two_passes(buf, |restoring, item| match restoring {
            false => journal.check(item),
            true => journal.restore(context, item, scratch).map(drop),
        })
        .await?;
        Ok(usize::try_from(journal.steps()).unwrap_or(usize::MAX))
    }

    /// Rebuilds `session` from the log, in place ([`Restore`]: emptied,
    /// then every item checked, then applied). `before_step` sees the
    /// context and the step's instant just before each step item is
    /// applied, as the live session's step saw them. `scratch` holds each
    /// step's hint as it is rendered again (as long as the longest hint).
    ///
    /// # Errors
    ///
    /// A log that cannot be read, that the journal refuses, or that is
    /// empty: start the session anew then ([`Session::new`],
    /// [`Session::start`], after [`clear`](Self::clear) for a refused log).
    pub async fn restore_session<'e, const M: usize, const B: usize, const T: usize>(
        &mut self,
        session: &mut Session<'e, M, B, T>,
        buf: &mut [u8],
        scratch: &mut [u8],
        mut before_step: impl FnMut(&AgentContext<'e, M, B, T>, Option<Timestamp>),
    ) -> Result<(), RestoreError> {
        let mut restore = Restore::new(session);
        self.two_passes(buf, |restoring, item| match restoring {
            false => restore.check(item),
            true => restore.apply_seeing(item, scratch, &mut before_step).map(drop),
        })
        .await?;
        restore.finish().map_err(RestoreError::Item)?;
        // The outbox resumes from the mark the log said last, or from its
        // oldest item (anything popped before it was delivered).
        if let Some(o) = self.outbox.as_mut() {
            let journal = session.journal();
            let first = journal.next_number().wrapping_sub(journal.items());
            o.delivered = o.delivered.max(journal.delivered().unwrap_or(0)).max(first);
        }
        Ok(())
    }

    /// Reads every item twice, oldest first: `each(false, item)` for all,
    /// then `each(true, item)` for all. One loop for both passes: one copy
    /// of the reading in the image.
    async fn two_passes(
        &mut self,
        buf: &mut [u8],
        mut each: impl FnMut(bool, &[u8]) -> Result<(), LogError>,
    ) -> Result<(), RestoreError> {
        for restoring in [false, true] {
            self.read_items(buf, |item| each(restoring, item)).await?;
        }
        Ok(())
    }
}

/// A [`Session`] appends its items to the log (and, for an outbox, logs
/// its mark with its steps).
impl<S: NorFlash> ItemStore for SessionLog<S> {
    type Error = AppendError;
    async fn append(&mut self, item: &[u8]) -> Result<(), AppendError> {
        SessionLog::append(self, item).await
    }

    fn delivered(&self) -> Option<u32> {
        SessionLog::delivered(self)
    }
}

// Popping rewrites an item's header: a NOR flash whose words can be
// written again (bits only cleared).
impl<S: MultiwriteNorFlash> SessionLog<S> {
    /// The policy that makes room: compacts the log when less than
    /// [`RESERVE`] is left (its region fills) and some items are dead:
    /// appends the journal's compaction header, then pops the items the
    /// context no longer needs (docs/reboot.md, "Compaction"). A power cut
    /// in between leaves a log that restores the same context. Call it
    /// before each event or step is numbered. Returns the items popped (0:
    /// no need, or none is dead yet); `buf` is scratch (at least
    /// [`MAX_ITEM`](crate::MAX_ITEM) bytes: the popped items pass through it).
    ///
    /// # Errors
    ///
    /// When the queue cannot be read or written, or the header does not
    /// fit `buf`; the log is as it was, or compacted in part (it still
    /// restores).
    pub async fn make_room<const M: usize, const B: usize, const T: usize>(
        &mut self,
        journal: &mut Journal<M>,
        context: &AgentContext<'_, M, B, T>,
        buf: &mut [u8],
    ) -> Result<u32, RestoreError> {
        let dead = journal.dead_items();
        if dead == 0 || !self.low_on_room().await? {
            return Ok(0);
        }
        let first = journal.next_number().wrapping_sub(journal.items());
        let n = journal.compaction_header(context, buf).map_err(|_| RestoreError::Storage)?;
        self.queue.push(&buf[..n], false).await.map_err(|_| RestoreError::Storage)?;
        let pop = self.poppable(first, dead);
        for _ in 0..pop {
            self.queue.pop(buf).await.map_err(|_| RestoreError::Storage)?;
            journal.popped(1);
        }
        Ok(pop)
    }
}

impl<S: MultiwriteNorFlash> SessionLog<S> {
    /// [`make_room`](Self::make_room)'s policy for a [`Session`]'s log: when
    /// less than [`RESERVE`] is left and some items are dead, appends the
    /// session's compaction header (a header the queue refuses leaves the
    /// log and the session as they were), then pops the dead items.
    ///
    /// # Errors
    ///
    /// As [`make_room`](Self::make_room).
    pub async fn make_room_for<const M: usize, const B: usize, const T: usize>(
        &mut self,
        session: &mut Session<'_, M, B, T>,
        buf: &mut [u8],
    ) -> Result<u32, RestoreError> {
        if session.dead_items() == 0 || !self.low_on_room().await? {
            return Ok(0);
        }
        let journal = session.journal();
        let first = journal.next_number().wrapping_sub(journal.items());
        let dead = session.compaction_header(buf, self).await.map_err(|_| RestoreError::Storage)?;
        let pop = self.poppable(first, dead);
        for _ in 0..pop {
            self.queue.pop(buf).await.map_err(|_| RestoreError::Storage)?;
            session.popped(1);
        }
        Ok(pop)
    }

    /// Of the `dead` items from `first` on, those a compaction pops: all
    /// of them, or for an outbox the delivered ones; when none of them is,
    /// all of them anyway (the agent's next step needs the room), the
    /// undelivered counted lost and the mark moved past them.
    fn poppable(&mut self, first: u32, dead: u32) -> u32 {
        let Some(o) = self.outbox.as_mut() else { return dead };
        let delivered = dead.min(o.delivered.saturating_sub(first));
        if delivered > 0 {
            return delivered;
        }
        let (from, to) = (o.delivered.max(first), first.wrapping_add(dead));
        if to > from {
            o.lost += to - from;
            let start = o.unreported.map_or(from, |(start, _)| start);
            o.unreported = Some((start, to));
            o.delivered = to;
        }
        dead
    }

    /// Whether less than [`RESERVE`] is left.
    async fn low_on_room(&mut self) -> Result<bool, RestoreError> {
        Ok(self.queue.space_left().await.map_err(|_| RestoreError::Storage)? < RESERVE)
    }
}
