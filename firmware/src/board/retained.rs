//! RAM that survives a reset under QEMU: the session log's "flash" and
//! what the board keeps across the reset it makes for `reset-after=N`.

use core::mem::MaybeUninit;
use core::ptr::{read_volatile, write_volatile};

/// Bytes of the session log's "flash": 10 pages of 1 KiB (8 until the
/// header carried the configuration). The ten steps write about 11 KB of
/// items, so the log compacts (the host tests find 9 pages the least the
/// session runs in: the items since the oldest message the context holds,
/// two pages kept free, and the headers with the configuration).
const LOG_BYTES: usize = 10 * 1024;
const RETAINED_MAGIC: u32 = 0x454E_5641;

/// RAM that survives `SCB::sys_reset` under QEMU (checked: docs/reboot.md):
/// in cortex-m-rt's `.uninit`, a NOLOAD section it neither zeroes nor
/// copies (and below `_stack_end`, so `paint-stack` leaves it alone). It
/// models the board's flash for the session log, and keeps what the board
/// needs across the reset it makes for `reset-after=N`.
#[repr(C)]
pub(super) struct Retained {
    /// [`RETAINED_MAGIC`] once set up; anything else is a cold boot.
    magic: u32,
    /// 1 once the board reset itself (`reset-after=N`): not again.
    pub(super) reset_done: u32,
    /// The millisecond counter at the reset, put back when the session resumes.
    pub(super) millis: u32,
    /// The script's next step at the reset (the log cannot say it once a
    /// compaction popped an environment step's `reply`).
    pub(super) next_step: u32,
    log: [u8; LOG_BYTES],
}

#[link_section = ".uninit.RETAINED"]
static mut RETAINED: MaybeUninit<Retained> = MaybeUninit::uninit();

pub(super) fn retained() -> *mut Retained {
    // Only a raw pointer is made here; the fields are read and written
    // through it with volatile accesses, one core, no interrupt touches them.
    core::ptr::addr_of_mut!(RETAINED).cast()
}

/// The log's region: erased (all `0xFF`) at a cold boot, kept as it is
/// after a reset.
pub(super) fn log_region() -> &'static mut [u8] {
    let r = retained();
    unsafe {
        if read_volatile(core::ptr::addr_of!((*r).magic)) != RETAINED_MAGIC {
            core::ptr::addr_of_mut!((*r).log).write_bytes(0xFF, 1);
            write_volatile(core::ptr::addr_of_mut!((*r).reset_done), 0);
            write_volatile(core::ptr::addr_of_mut!((*r).magic), RETAINED_MAGIC);
        }
        // Board::take runs once: this is the only reference to the log.
        &mut *core::ptr::addr_of_mut!((*r).log)
    }
}
