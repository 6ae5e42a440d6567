//! A NOR flash over RAM, with the semantics of sequential-storage's mock
//! flash (`mock_flash.rs`, which the power-cut tests run on).

use embedded_storage_async::nor_flash::{
    ErrorType, MultiwriteNorFlash, NorFlash, NorFlashError, NorFlashErrorKind, ReadNorFlash,
};

use crate::{PAGE, WORD};

/// A NOR flash of [`WORD`]-byte words and [`PAGE`]-byte pages over the
/// bytes of `B` (`&mut [u8]` on the board, a `Vec<u8>` on the host): an
/// erase sets a page's bytes to `0xFF`, a write can only clear bits.
///
/// It refuses what sequential-storage's mock flash refuses: a read or
/// write that is empty, or whose offset or length is not whole words; an
/// erase whose ends are not page boundaries (or that ends before it
/// starts); anything outside the region. Unlike the mock it does not check
/// that a write's source buffer is word-aligned in memory (the device
/// pushes items from any byte of its buffer: the power-cut tests turn that
/// check off too), and it does not count the writes to a word between
/// erases (that needs memory besides the bytes; the queue pops an item by
/// writing its header a second time, which the mock allows with
/// `WriteCountCheck::Twice`, as the tests run it).
#[derive(Debug, Clone)]
pub struct RamFlash<B>(pub B);

/// What a [`RamFlash`] refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RamFlashError {
    /// An access outside the region.
    OutOfBounds,
    /// An access that is empty or not of whole words (an erase: not of
    /// whole pages).
    NotAligned,
}

impl core::fmt::Display for RamFlashError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            RamFlashError::OutOfBounds => "an access outside the flash region",
            RamFlashError::NotAligned => "an access that is not of whole words (or pages)",
        })
    }
}

impl core::error::Error for RamFlashError {}

impl NorFlashError for RamFlashError {
    fn kind(&self) -> NorFlashErrorKind {
        match self {
            RamFlashError::OutOfBounds => NorFlashErrorKind::OutOfBounds,
            RamFlashError::NotAligned => NorFlashErrorKind::NotAligned,
        }
    }
}

impl<B: AsMut<[u8]>> RamFlash<B> {
    /// The words at `offset..offset + len`: whole words, not empty, inside.
    fn words(&mut self, offset: u32, len: usize) -> Result<&mut [u8], RamFlashError> {
        let start = offset as usize;
        if !start.is_multiple_of(WORD) || len == 0 || !len.is_multiple_of(WORD) {
            return Err(RamFlashError::NotAligned);
        }
        let end = start.checked_add(len).ok_or(RamFlashError::OutOfBounds)?;
        self.0.as_mut().get_mut(start..end).ok_or(RamFlashError::OutOfBounds)
    }
}

impl<B> ErrorType for RamFlash<B> {
    type Error = RamFlashError;
}

impl<B: AsMut<[u8]> + AsRef<[u8]>> ReadNorFlash for RamFlash<B> {
    const READ_SIZE: usize = WORD;

    async fn read(&mut self, offset: u32, bytes: &mut [u8]) -> Result<(), RamFlashError> {
        bytes.copy_from_slice(self.words(offset, bytes.len())?);
        Ok(())
    }

    fn capacity(&self) -> usize {
        self.0.as_ref().len()
    }
}

impl<B: AsMut<[u8]> + AsRef<[u8]>> NorFlash for RamFlash<B> {
    const WRITE_SIZE: usize = WORD;
    const ERASE_SIZE: usize = PAGE;

    async fn erase(&mut self, from: u32, to: u32) -> Result<(), RamFlashError> {
        let (from, to) = (from as usize, to as usize);
        if to > self.capacity() {
            return Err(RamFlashError::OutOfBounds);
        }
        if from > to || !from.is_multiple_of(PAGE) || !to.is_multiple_of(PAGE) {
            return Err(RamFlashError::NotAligned);
        }
        self.0.as_mut()[from..to].fill(0xFF);
        Ok(())
    }

    async fn write(&mut self, offset: u32, bytes: &[u8]) -> Result<(), RamFlashError> {
        for (cell, byte) in self.words(offset, bytes.len())?.iter_mut().zip(bytes) {
            *cell &= *byte;
        }
        Ok(())
    }
}

// A NOR word can be written again as long as bits are only cleared.
impl<B: AsMut<[u8]> + AsRef<[u8]>> MultiwriteNorFlash for RamFlash<B> {}

#[cfg(test)]
mod tests {
    extern crate std;

    use std::vec;
    use std::vec::Vec;

    use embassy_futures::block_on;
    use embedded_storage_async::nor_flash::{NorFlash, ReadNorFlash};
    use sequential_storage::cache::Cache;
    use sequential_storage::mock_flash::{MockFlashBase, WriteCountCheck};
    use sequential_storage::queue::{QueueConfig, QueueStorage};

    use super::{RamFlash, RamFlashError};
    use crate::PAGE;

    type Mock = MockFlashBase<4, 4, 256>;

    fn mock() -> Mock {
        Mock::new(WriteCountCheck::Twice, None, false)
    }

    /// Each access the mock refuses, the RAM flash refuses (the mock
    /// panics on a read that is not whole words; the RAM flash says so).
    #[test]
    fn refuses_what_the_mock_refuses() {
        let mut ram = RamFlash(vec![0xFF; 4 * PAGE]);
        let mut mock = mock();
        let mut buf = [0u8; 8];
        for (offset, len) in
            [(2u32, 4usize), (0, 0), (4 * PAGE as u32, 4), (4 * PAGE as u32 - 4, 8)]
        {
            let (r, m) = (
                block_on(ram.write(offset, &buf[..len])),
                block_on(mock.write(offset, &buf[..len])),
            );
            assert_eq!((r.is_err(), m.is_err()), (true, true), "write {offset} {len}");
            let (r, m) = (
                block_on(ram.read(offset, &mut buf[..len])),
                block_on(mock.read(offset, &mut buf[..len])),
            );
            assert_eq!((r.is_err(), m.is_err()), (true, true), "read {offset} {len}");
        }
        assert_eq!(block_on(ram.write(2, &buf[..4])), Err(RamFlashError::NotAligned));
        assert_eq!(
            block_on(ram.write(4 * PAGE as u32, &buf[..4])),
            Err(RamFlashError::OutOfBounds)
        );
        assert_eq!(block_on(ram.read(0, &mut buf[..6])), Err(RamFlashError::NotAligned));
        for (from, to) in
            [(4u32, PAGE as u32), (0, 5 * PAGE as u32), (PAGE as u32, PAGE as u32 + 4)]
        {
            assert!(
                block_on(ram.erase(from, to)).is_err() && block_on(mock.erase(from, to)).is_err(),
                "erase {from}..{to}"
            );
        }
    }

    /// Erases set 0xFF, writes clear bits: the same bytes as the mock's
    /// after the same accesses, and a queue over each holds the same.
    #[test]
    fn holds_the_bytes_the_mock_holds() {
        let (mut ram, mut mocked) = (RamFlash(vec![0xFF; 4 * PAGE]), mock());
        for flash in [&mut ram as &mut dyn Access, &mut mocked] {
            flash.access();
        }
        assert_eq!(ram.0, mocked.as_bytes());

        let end = 4 * PAGE as u32;
        let mut on_ram = QueueStorage::new(
            RamFlash(vec![0xFF; 4 * PAGE]),
            QueueConfig::new(0..end),
            Cache::new_uncached(),
        );
        let mut on_mock =
            QueueStorage::new(mock(), QueueConfig::new(0..end), Cache::new_uncached());
        let mut buf = [0u8; 256];
        for i in 0..200u32 {
            let item: Vec<u8> =
                (0..(i % 97 + 1)).map(|b| (b as u8).wrapping_mul(i as u8)).collect();
            assert_eq!(
                block_on(on_ram.push(&item, false)).is_ok(),
                block_on(on_mock.push(&item, false)).is_ok()
            );
            if i % 3 == 0 {
                let popped = block_on(on_ram.pop(&mut buf)).unwrap().map(|b| b.to_vec());
                assert_eq!(popped, block_on(on_mock.pop(&mut buf)).unwrap().map(|b| b.to_vec()));
            }
            assert_eq!(on_ram.flash().0, on_mock.flash().as_bytes(), "after item {i}");
        }
    }

    /// The same accesses on either flash.
    trait Access {
        fn access(&mut self);
    }

    impl<F: NorFlash> Access for F {
        fn access(&mut self) {
            block_on(async {
                self.write(8, &[0x0F, 0xF0, 0x00, 0xFF]).await.unwrap();
                self.write(8, &[0xFF, 0x0F, 0xFF, 0x00]).await.unwrap();
                self.write(PAGE as u32, &[0x12; 8]).await.unwrap();
                self.erase(PAGE as u32, 2 * PAGE as u32).await.unwrap();
                self.write(PAGE as u32 + 4, &[0x34; 4]).await.unwrap();
            });
        }
    }
}
