//! An envaware device's uplink: its session log is its outbox. Each item
//! of the log ([`envaware_flashlog::SessionLog::with_outbox`]) is published
//! to an MQTT broker with QoS 1, in order, from the first item not yet
//! delivered; an item counts as delivered on its PUBACK, and the log keeps
//! that mark (each step item carries it when it moved), so that after a
//! broker outage or a reset the device resumes from it: at least once, in
//! order, never a gap.
//!
//! - topic `envaware/<device>/log`, payload the item's number (4 bytes,
//!   little-endian) then the item, read from the log into place behind it;
//! - items the log dropped before they were delivered (its region was full
//!   of them: see [`SessionLog::with_outbox`]) are reported on
//!   `envaware/<device>/lost` as two numbers, `from` and `to` (4 bytes
//!   each, little-endian: the numbers `from..to` are lost), before the item
//!   after them;
//! - [`run`] publishes, one item in flight at a time, over any byte stream
//!   a [`Link`] connects (a UART that a modem or QEMU connects to the
//!   broker's TCP port, a host's TCP socket), with minimq (MQTT 5, no heap:
//!   two buffers, 128 bytes for what the broker sends and room for one
//!   item's PUBLISH; its keepalive runs on embassy-time, so a host needs
//!   embassy-time's `std` driver). minimq rather than rust-mqtt: on the
//!   Cortex-M3 it costs 10.7 KB of flash where rust-mqtt 0.6 cost 26.4 KB,
//!   which took the firmware over its 192 KiB budget.
//!   A broker that does not answer within [`Timing::answer_ms`] is taken as
//!   gone: the connection is dropped and made again after
//!   [`Timing::retry_ms`]. It shares the log with the agent through a
//!   mutex, held only while an item is read or the mark moved: the agent's
//!   steps never wait for the broker.

#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations, rustdoc::broken_intra_doc_links)]

use core::cell::Cell;
use core::future::Future;

use embassy_futures::select::{select, Either};
use embassy_sync::blocking_mutex::raw::RawMutex;
use embassy_sync::mutex::Mutex;
use embedded_io_async::{ErrorType, Read, Write};
use embedded_storage_async::nor_flash::NorFlash;
use envaware_flashlog::{Numbered, SessionLog, MAX_ITEM};
use minimq::{Buffers, ConfigBuilder, Connection, Publication, QoS, Session};

/// The first level of every topic.
pub const TOPIC_ROOT: &str = "envaware";

/// The longest device id (a topic level and the MQTT client id).
pub const MAX_DEVICE_ID: usize = 40;

/// The longest payload: an item's number and the longest item.
pub const MAX_PAYLOAD: usize = 4 + MAX_ITEM;

/// What the uplink needs of its board: a connection to the broker and a
/// timer.
pub trait Link {
    /// The byte stream to the broker.
    type Transport: Read + Write;

    /// A fresh connection to the broker (`None`: none now; [`run`] tries
    /// again after [`Timing::retry_ms`]). A board whose modem keeps one
    /// link open returns it again, with any stale bytes drained.
    fn connect(&mut self) -> impl Future<Output = Option<Self::Transport>>;

    /// Waits `ms` milliseconds.
    fn sleep_ms(&mut self, ms: u32) -> impl Future<Output = ()>;
}

/// How long the uplink waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Timing {
    /// For the broker's CONNACK or PUBACK before the connection is taken
    /// as gone.
    pub answer_ms: u32,
    /// Before connecting again after a failed connection.
    pub retry_ms: u32,
    /// Before looking at the log again when every item was delivered.
    pub idle_ms: u32,
}

impl Default for Timing {
    /// 5 s for an answer, 1 s before connecting again, 100 ms between
    /// looks at a delivered log.
    fn default() -> Self {
        Timing { answer_ms: 5_000, retry_ms: 1_000, idle_ms: 100 }
    }
}

/// What the uplink did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Stats {
    /// Items delivered (PUBACK received).
    pub delivered: u32,
    /// Connections made (CONNACK received).
    pub connections: u32,
    /// Connections given up (no answer in time, or an error).
    pub failures: u32,
    /// Bytes sent to the broker, MQTT framing included.
    pub sent_bytes: u64,
    /// Bytes received from the broker.
    pub received_bytes: u64,
    /// Items reported lost.
    pub lost: u32,
}

/// `envaware/<device>/<leaf>` in `out`. `None`: `out` is too short, or
/// the device id is empty, longer than [`MAX_DEVICE_ID`], or holds a
/// character a topic level cannot (`/`, `+`, `#`).
pub fn topic<'o>(device: &str, leaf: &str, out: &'o mut [u8]) -> Option<&'o str> {
    let bad = |c: char| matches!(c, '/' | '+' | '#') || c.is_control();
    if device.is_empty() || device.len() > MAX_DEVICE_ID || device.contains(bad) {
        return None;
    }
    let mut at = 0;
    for part in [TOPIC_ROOT, "/", device, "/", leaf] {
        out.get_mut(at..at + part.len())?.copy_from_slice(part.as_bytes());
        at += part.len();
    }
    core::str::from_utf8(out.get(..at)?).ok()
}

/// A byte stream that counts what goes through it.
struct Counted<'c, T> {
    inner: T,
    sent: &'c Cell<u64>,
    received: &'c Cell<u64>,
}

impl<T: ErrorType> ErrorType for Counted<'_, T> {
    type Error = T::Error;
}

impl<T: Read> Read for Counted<'_, T> {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, T::Error> {
        let n = self.inner.read(buf).await?;
        self.received.set(self.received.get() + n as u64);
        Ok(n)
    }
}

impl<T: Write> Write for Counted<'_, T> {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, T::Error> {
        let n = self.inner.write(buf).await?;
        self.sent.set(self.sent.get() + n as u64);
        Ok(n)
    }

    async fn flush(&mut self) -> Result<(), T::Error> {
        self.inner.flush().await
    }
}

/// Why a connection was given up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gone {
    /// No answer in time.
    Silent,
    /// The client or the stream failed.
    Failed,
}

/// Publishes `log`'s items from its mark, as device `device`, over the
/// connections `link` makes, until `keep_going` (asked after each item
/// delivered, whenever the log is found delivered, and after each failed
/// connection) says to stop;
/// returns what it did. `payload_buf` holds one payload ([`MAX_PAYLOAD`]
/// bytes is enough for any item). A device id a topic cannot hold
/// ([`topic`]) publishes nothing.
pub async fn run<M: RawMutex, S: NorFlash, L: Link>(
    log: &Mutex<M, SessionLog<S>>,
    link: &mut L,
    device: &str,
    timing: Timing,
    payload_buf: &mut [u8],
    mut keep_going: impl FnMut(&Stats) -> bool,
) -> Stats {
    let (mut log_topic, mut lost_topic) = ([0u8; 64], [0u8; 64]);
    let (Some(log_topic), Some(lost_topic)) =
        (topic(device, "log", &mut log_topic), topic(device, "lost", &mut lost_topic))
    else {
        return Stats::default();
    };
    // minimq's buffers: one inbound packet (CONNACK, PUBACK), and one
    // outbound PUBLISH kept until its PUBACK, with room to reconnect.
    let (mut rx, mut tx) = ([0u8; 128], [0u8; MAX_PAYLOAD + 256]);
    let Ok(config) = ConfigBuilder::new(Buffers::new(&mut rx, &mut tx)).client_id(device) else {
        return Stats::default();
    };
    let mut session = Session::new(config);
    let (sent, received) = (Cell::new(0), Cell::new(0));
    let mut stats = Stats::default();
    // Items dropped and not yet reported: kept here until the broker acks.
    let mut unreported: Option<(u32, u32)> = None;
    loop {
        let gone = connection(
            log,
            link,
            &mut session,
            (log_topic, lost_topic),
            timing,
            payload_buf,
            (&sent, &received),
            &mut stats,
            &mut unreported,
            &mut keep_going,
        )
        .await;
        stats.sent_bytes = sent.get();
        stats.received_bytes = received.get();
        match gone {
            None => return stats,
            Some(_) => {
                stats.failures += 1;
                // Asked after a failure too: a caller may give up on a
                // broker that stays away.
                if !keep_going(&stats) {
                    return stats;
                }
                link.sleep_ms(timing.retry_ms).await;
            }
        }
    }
}

/// One connection: connects, then publishes until the link fails
/// (`Some`) or `keep_going` says to stop (`None`).
#[allow(clippy::too_many_arguments)]
async fn connection<M: RawMutex, S: NorFlash, L: Link>(
    log: &Mutex<M, SessionLog<S>>,
    link: &mut L,
    session: &mut Session<'_>,
    (log_topic, lost_topic): (&str, &str),
    timing: Timing,
    payload_buf: &mut [u8],
    (sent, received): (&Cell<u64>, &Cell<u64>),
    stats: &mut Stats,
    unreported: &mut Option<(u32, u32)>,
    keep_going: &mut impl FnMut(&Stats) -> bool,
) -> Option<Gone> {
    // No connection now: given up, and made again after `retry_ms`.
    let Some(transport) = link.connect().await else { return Some(Gone::Failed) };
    let net = Counted { inner: transport, sent, received };
    let mut conn = match select(session.connect(net), link.sleep_ms(timing.answer_ms)).await {
        Either::First(Ok(conn)) => conn,
        Either::First(Err(_)) => return Some(Gone::Failed),
        Either::Second(()) => return Some(Gone::Silent),
    };
    stats.connections += 1;
    loop {
        // A loss first: the fleet learns of it before the item after it.
        if let Some(lost) = log.lock().await.take_lost() {
            *unreported = Some(match *unreported {
                Some((from, _)) => (from, lost.1),
                None => lost,
            });
        }
        if let Some((from, to)) = *unreported {
            let mut range = [0u8; 8];
            range[..4].copy_from_slice(&from.to_le_bytes());
            range[4..].copy_from_slice(&to.to_le_bytes());
            if let Err(gone) = publish(&mut conn, link, lost_topic, &range, timing).await {
                return Some(gone);
            }
            stats.lost += to - from;
            *unreported = None;
        }
        let (number, found) = {
            let mut log = log.lock().await;
            let mark = log.delivered().unwrap_or(0);
            let item = payload_buf.get_mut(4..).unwrap_or_default();
            (mark, log.read_item(mark, item).await)
        };
        let len = match found {
            Ok(Numbered::Found(len)) => len,
            Ok(Numbered::NotYet { .. }) => {
                if !keep_going(stats) {
                    return None;
                }
                link.sleep_ms(timing.idle_ms).await;
                continue;
            }
            Ok(Numbered::Gone { first }) => {
                // Popped undelivered before this log was opened: lost.
                *unreported = Some((number, first));
                log.lock().await.set_delivered(first);
                continue;
            }
            // A log that cannot be read now: try again later.
            Err(_) => {
                link.sleep_ms(timing.idle_ms).await;
                continue;
            }
        };
        if let Some(head) = payload_buf.get_mut(..4) {
            head.copy_from_slice(&number.to_le_bytes());
        }
        let message = payload_buf.get(..4 + len).unwrap_or_default();
        if let Err(gone) = publish(&mut conn, link, log_topic, message, timing).await {
            return Some(gone);
        }
        log.lock().await.set_delivered(number.wrapping_add(1));
        stats.delivered += 1;
        stats.sent_bytes = sent.get();
        stats.received_bytes = received.get();
        if !keep_going(stats) {
            return None;
        }
    }
}

/// Publishes `message` to `topic` with QoS 1 and waits for its PUBACK.
async fn publish<T: Read + Write, L: Link>(
    conn: &mut Connection<'_, '_, T>,
    link: &mut L,
    topic: &str,
    message: &[u8],
    timing: Timing,
) -> Result<(), Gone> {
    let publication = Publication::bytes(topic, message).qos(QoS::AtLeastOnce);
    let op = match select(conn.publish(publication), link.sleep_ms(timing.answer_ms)).await {
        Either::First(Ok(Some(op))) => op,
        Either::First(_) => return Err(Gone::Failed),
        Either::Second(()) => return Err(Gone::Silent),
    };
    while !conn.is_complete(&op) {
        if conn.is_invalidated(&op) {
            return Err(Gone::Failed);
        }
        match select(conn.poll(), link.sleep_ms(timing.answer_ms)).await {
            Either::First(Ok(_)) => {}
            Either::First(Err(_)) => return Err(Gone::Failed),
            Either::Second(()) => return Err(Gone::Silent),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topic_names_the_device_and_refuses_what_a_level_cannot_hold() {
        let mut out = [0u8; 64];
        assert_eq!(topic("greenhouse-7", "log", &mut out), Some("envaware/greenhouse-7/log"));
        for bad in ["", "a/b", "a+", "#", "tab\t", &"x".repeat(MAX_DEVICE_ID + 1)] {
            assert_eq!(topic(bad, "log", &mut out), None, "{bad:?}");
        }
        assert_eq!(topic("abc", "log", &mut [0u8; 10]), None, "too long for the buffer");
    }

    /// A link that connects nothing, counting its attempts.
    struct Unreachable<'a>(&'a Cell<u32>);

    /// A transport never made.
    struct Never;
    impl ErrorType for Never {
        type Error = core::convert::Infallible;
    }
    impl Read for Never {
        async fn read(&mut self, _: &mut [u8]) -> Result<usize, Self::Error> {
            Ok(0)
        }
    }
    impl Write for Never {
        async fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
            Ok(buf.len())
        }
        async fn flush(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    impl Link for Unreachable<'_> {
        type Transport = Never;
        async fn connect(&mut self) -> Option<Never> {
            self.0.set(self.0.get() + 1);
            None
        }
        async fn sleep_ms(&mut self, _: u32) {
            embassy_futures::yield_now().await;
        }
    }

    #[test]
    fn a_broker_out_of_reach_is_tried_again_not_given_up_for_good() {
        use embassy_sync::blocking_mutex::raw::NoopRawMutex;
        use envaware_flashlog::RamFlash;
        let mut region = [0xFFu8; 4 * 1024];
        let log: Mutex<NoopRawMutex, _> =
            Mutex::new(SessionLog::with_outbox(RamFlash(&mut region[..])));
        let attempts = Cell::new(0);
        let mut link = Unreachable(&attempts);
        let mut payload = [0u8; 64];
        let uplink = run(&log, &mut link, "dev-1", Timing::default(), &mut payload, |_| true);
        let enough = async {
            while attempts.get() < 5 {
                embassy_futures::yield_now().await;
            }
        };
        // `run` keeps trying: it is the waiting that ends, not `run`.
        let ended = embassy_futures::block_on(select(uplink, enough));
        assert!(matches!(ended, Either::Second(())), "run returned {ended:?}");
        assert_eq!(attempts.get(), 5);
    }
}
