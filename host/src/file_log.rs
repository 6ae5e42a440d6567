//! The journal's store on a host: an append-only file, one record per item.
//!
//! # The file
//!
//! A header, then records back to back:
//!
//! | bytes | what |
//! |---|---|
//! | 16 | [`MAGIC`], `envaware log v1` and a line feed |
//! | 8 | the file's salt: random, chosen when the file is made |
//! | 4 | CRC-32 of the magic and the salt, little-endian |
//!
//! and for each item:
//!
//! | bytes | what |
//! |---|---|
//! | 4 | the item's length `n`, `u32` little-endian |
//! | `n` | the item, any bytes |
//! | 4 | CRC-32 (ISO-HDLC, as zlib's `crc32`) of the salt, the 4 length bytes and the item, little-endian |
//!
//! The salt makes a record's CRC depend on the file: an item may hold any
//! bytes, a whole record included, and that inner record's CRC is not one
//! of this file's unless its writer knew the salt (see the rule's limit
//! below).
//!
//! A file shorter than the header that holds a prefix of it (a power cut
//! while the file was made) is an empty log: its header is written again.
//! Any other file that does not start with [`MAGIC`] is refused
//! ([`FileLogError::NotALog`]); a header whose CRC fails is damage
//! ([`FileLogError::Corrupt`] at byte 0: a salt read wrong would make
//! every record look torn).
//!
//! # Torn tail or damage: the rule
//!
//! [`FileLog::open`] reads the records from the end of the header. Let `p` be the offset
//! of the first record that is not whole and valid: fewer than 8 bytes left,
//! a declared length that runs past the end of the file, or a CRC that does
//! not match.
//!
//! - If a whole, valid record starts at **any byte offset after `p`**, the
//!   file is damaged in the middle: [`FileLogError::Corrupt`] names `p`,
//!   and nothing is cut (what follows may be the session's later items).
//! - Otherwise the bytes from `p` to the end are a **torn tail**: the file
//!   is truncated to `p` and fsynced, and [`Opened::torn`] says where and
//!   how many bytes were dropped.
//!
//! Why: the log only ever appends, one record per `write`. A power cut
//! leaves a prefix of the bytes appended (a record cut anywhere: in its
//! length, its item or its CRC), possibly followed by bytes the file system
//! had allocated but not yet written (zeros, after a crash on ext4 or XFS);
//! none of that holds a whole valid record after the cut one. Damage in the
//! middle (a flipped bit, a lost page, a length field that now runs past
//! the end) leaves the later records intact, and one of them is found. The
//! search tries every offset after `p`, so a damaged length does not hide
//! the records after it; the cost is one length read per offset and a CRC
//! only where the declared record fits in the file.
//!
//! The limit of the rule: an item whose bytes hold a whole record of their
//! own, with a CRC of this file's salt, torn after that inner record, is
//! refused as damage (a refusal, never a loss). Without the salt, a writer
//! of an item (a model's tool arguments, say) hits the right CRC with a
//! chance of 2^-32 per record it plants.
//!
//! # Durability: [`Sync`]
//!
//! - [`Sync::EveryItem`]: [`FileLog::append`] writes the record with one
//!   `write_all`, then `sync_data`: when `append` returns, the item is on
//!   the disk.
//! - [`Sync::Never`]: `append` writes, the OS decides when the bytes reach
//!   the disk ([`FileLog::sync`] forces it). A power cut may lose a suffix
//!   of the items appended since the last sync; the torn-tail rule still
//!   keeps the prefix that made it.
//!
//! A new file's directory entry is fsynced when [`FileLog::open`] creates
//! it, and a torn tail's truncation is fsynced, whatever the policy.
//!
//! # Memory
//!
//! [`FileLog::open`] reads the whole file once and keeps every item in
//! memory (a host's log is kept short by [`FileLog::compact`]); the file is
//! not read again, only appended to.

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};

/// Bytes of a record around its item: the length and the CRC.
const FRAME: usize = 8;

/// What a log file starts with.
pub const MAGIC: [u8; 16] = *b"envaware log v1\n";

/// The file's header: [`MAGIC`], the salt and their CRC.
const HEADER: usize = MAGIC.len() + 8 + 4;

/// When appended items reach the disk (see the [module docs](self#durability-sync)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    /// `sync_data` after every append: an item appended is on the disk when
    /// [`FileLog::append`] returns.
    EveryItem,
    /// No sync but [`FileLog::sync`]: the OS decides.
    Never,
}

/// What [`FileLog::open`] found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Opened {
    /// Items read (after a torn tail was cut).
    pub items: usize,
    /// The torn tail cut, if there was one.
    pub torn: Option<TornTail>,
}

/// A torn tail cut from the file (see the [module docs](self#torn-tail-or-damage-the-rule)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TornTail {
    /// Where it began: the end of the last whole record, the file's length now.
    pub offset: u64,
    /// The bytes dropped: the file's length before, less `offset`.
    pub dropped_bytes: u64,
}

/// An error of a [`FileLog`], naming the file and the byte offset.
#[derive(Debug)]
#[non_exhaustive]
pub enum FileLogError {
    /// The OS failed an operation.
    Io {
        /// The file.
        path: PathBuf,
        /// Where in the file (0 for the file as a whole).
        offset: u64,
        /// What was being done: `"open"`, `"read"`, `"append"`, ….
        action: &'static str,
        /// The OS's error.
        source: io::Error,
    },
    /// A damaged record with a valid record after it: not a torn tail, so
    /// nothing was cut (the file is as it was).
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Where the damaged record begins.
        offset: u64,
    },
    /// An item longer than a record's `u32` length can say.
    TooLong {
        /// The file.
        path: PathBuf,
        /// The item's length.
        len: usize,
    },
    /// The file does not start with [`MAGIC`]: not a log of this format (a
    /// log written before the file had a header, or another file).
    NotALog {
        /// The file.
        path: PathBuf,
    },
    /// An earlier append or sync failed and its bytes may be in the file:
    /// the log refuses to append after them. Open the file again to read
    /// what it holds.
    Poisoned {
        /// The file.
        path: PathBuf,
        /// The end of the last item known to be whole.
        offset: u64,
    },
}

impl fmt::Display for FileLogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileLogError::Io { path, offset, action, source } => {
                write!(f, "{}: {action} at byte {offset}: {source}", path.display())
            }
            FileLogError::Corrupt { path, offset } => write!(
                f,
                "{}: damaged record at byte {offset}, with a valid record after it \
                 (not a torn tail: nothing cut)",
                path.display()
            ),
            FileLogError::TooLong { path, len } => {
                write!(
                    f,
                    "{}: an item of {len} bytes is longer than a record holds",
                    path.display()
                )
            }
            FileLogError::NotALog { path } => {
                write!(f, "{}: {}", path.display(), ReadError::NotALog)
            }
            FileLogError::Poisoned { path, offset } => write!(
                f,
                "{}: an earlier append or sync failed after byte {offset}: open the file again",
                path.display()
            ),
        }
    }
}

impl std::error::Error for FileLogError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FileLogError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// An append-only file of journal items (see the [module docs](self)).
#[derive(Debug)]
pub struct FileLog {
    path: PathBuf,
    file: File,
    salt: [u8; 8],
    items: Vec<Vec<u8>>,
    /// The end of the last whole record: where the next is appended.
    end: u64,
    sync: Sync,
    poisoned: bool,
}

impl FileLog {
    /// Opens the log at `path`, creating the file if it is absent, and reads
    /// every item. A torn tail is cut (the file truncated to its last whole
    /// record, and fsynced) and reported in [`Opened::torn`].
    ///
    /// # Errors
    ///
    /// [`FileLogError::Corrupt`] when a damaged record has a valid record
    /// after it (nothing is cut then); [`FileLogError::Io`] when the OS
    /// fails.
    pub fn open(path: impl AsRef<Path>, sync: Sync) -> Result<(FileLog, Opened), FileLogError> {
        let path = path.as_ref().to_path_buf();
        let io = |action, offset| {
            let path = path.clone();
            move |source| FileLogError::Io { path, offset, action, source }
        };
        let existed = match fs::symlink_metadata(&path) {
            Ok(_) => true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(io("open", 0)(e)),
        };
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(io("open", 0))?;
        if !existed {
            file.sync_all().map_err(io("sync the new file", 0))?;
            sync_dir(&path).map_err(io("sync the directory of the new file", 0))?;
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io("read", 0))?;
        if bytes.len() < HEADER && MAGIC.starts_with(&bytes[..bytes.len().min(MAGIC.len())]) {
            // A new file, or one cut while it was made: an empty log.
            let header = header(&new_salt());
            file.set_len(0).map_err(io("write the header", 0))?;
            file.write_all(&header).map_err(io("write the header", 0))?;
            file.sync_all().map_err(io("sync the header", 0))?;
            bytes = header;
        }
        let read = match read_records(&bytes) {
            Ok(read) => read,
            Err(ReadError::NotALog) => return Err(FileLogError::NotALog { path }),
            Err(ReadError::DamagedHeader) => return Err(FileLogError::Corrupt { path, offset: 0 }),
        };
        let end = read.end as u64;
        let torn = match read.tail {
            Tail::Clean => None,
            Tail::Damaged => return Err(FileLogError::Corrupt { path, offset: end }),
            Tail::Torn => {
                file.set_len(end).map_err(io("cut the torn tail", end))?;
                file.sync_all().map_err(io("sync the cut", end))?;
                Some(TornTail { offset: end, dropped_bytes: bytes.len() as u64 - end })
            }
        };
        let salt = read.salt;
        let items: Vec<Vec<u8>> = read.items.into_iter().map(|item| bytes[item].to_vec()).collect();
        let opened = Opened { items: items.len(), torn };
        Ok((FileLog { path, file, salt, items, end, sync, poisoned: false }, opened))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The items, oldest first (from memory: see the [module docs](self#memory)).
    pub fn items(&self) -> impl ExactSizeIterator<Item = &[u8]> + DoubleEndedIterator + Clone + '_ {
        self.items.iter().map(Vec::as_slice)
    }

    /// The item at `index`.
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        self.items.get(index).map(Vec::as_slice)
    }

    /// How many items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The file's length: the end of its last record.
    pub fn file_len(&self) -> u64 {
        self.end
    }

    /// Appends `item` as one record, in a single `write_all`, then syncs as
    /// the [`Sync`] policy says.
    ///
    /// # Errors
    ///
    /// When the item is longer than `u32::MAX`, or the OS fails. A failed
    /// write is cut from the file again; if that fails too, or the sync
    /// fails (the bytes' fate is then unknown), the log is poisoned: every
    /// later append is [`FileLogError::Poisoned`], and the file is to be
    /// opened again. The failed item is not among [`items`](Self::items).
    pub fn append(&mut self, item: &[u8]) -> Result<(), FileLogError> {
        if self.poisoned {
            return Err(FileLogError::Poisoned { path: self.path.clone(), offset: self.end });
        }
        let record = record(&self.salt, item)
            .ok_or_else(|| FileLogError::TooLong { path: self.path.clone(), len: item.len() })?;
        if let Err(source) = self.file.write_all(&record) {
            self.poisoned = self.file.set_len(self.end).is_err();
            return Err(self.io("append", source));
        }
        if self.sync == Sync::EveryItem {
            if let Err(source) = self.file.sync_data() {
                self.poisoned = true;
                return Err(self.io("sync the append", source));
            }
        }
        self.items.push(item.to_vec());
        self.end += record.len() as u64;
        Ok(())
    }

    /// Puts every item appended on the disk (`sync_data`), whatever the policy.
    ///
    /// # Errors
    ///
    /// When the OS fails: the log is poisoned then (see [`append`](Self::append)).
    pub fn sync(&mut self) -> Result<(), FileLogError> {
        if self.poisoned {
            return Err(FileLogError::Poisoned { path: self.path.clone(), offset: self.end });
        }
        self.file.sync_data().map_err(|source| {
            self.poisoned = true;
            self.io("sync", source)
        })
    }

    /// Rewrites the file keeping the items from `keep_from` on (all of them
    /// dropped when `keep_from >= len()`): they are written to a temporary
    /// file beside it (its name with `.compact` added), which is fsynced and
    /// renamed over the log, then the directory is fsynced. A crash at any
    /// point leaves the old file or the new one, whole, at the log's path
    /// (a temporary file left behind is not read, and is replaced by the
    /// next compaction).
    ///
    /// # Errors
    ///
    /// When the OS fails. Before the rename the log is as it was. After it
    /// (only the directory's sync can fail then) the log is the compacted
    /// one, but its rename may not survive a power cut.
    pub fn compact(&mut self, keep_from: usize) -> Result<(), FileLogError> {
        if self.poisoned {
            return Err(FileLogError::Poisoned { path: self.path.clone(), offset: self.end });
        }
        let keep_from = keep_from.min(self.items.len());
        let temp = self.temp_path();
        let io = |action: &'static str| {
            let path = temp.clone();
            move |source| FileLogError::Io { path, offset: 0, action, source }
        };
        match fs::remove_file(&temp) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(io("remove the old temporary file")(e));
            }
            _ => {}
        }
        let mut bytes = header(&self.salt);
        for item in &self.items[keep_from..] {
            // Every item kept was appended, so its length fits a record.
            bytes.extend(record(&self.salt, item).ok_or_else(|| FileLogError::TooLong {
                path: self.path.clone(),
                len: item.len(),
            })?);
        }
        let written = OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .open(&temp)
            .map_err(io("create the temporary file"))
            .and_then(|mut file| {
                file.write_all(&bytes).map_err(io("write the temporary file"))?;
                file.sync_all().map_err(io("sync the temporary file"))?;
                Ok(file)
            });
        let file = match written.and_then(|file| {
            fs::rename(&temp, &self.path).map_err(io("rename the temporary file"))?;
            Ok(file)
        }) {
            Ok(file) => file,
            Err(e) => {
                let _ = fs::remove_file(&temp);
                return Err(e);
            }
        };
        self.file = file;
        self.items.drain(..keep_from);
        self.end = bytes.len() as u64;
        sync_dir(&self.path)
            .map_err(|source| self.io("sync the directory after compacting", source))
    }

    /// The temporary file of a compaction: the log's name with `.compact` added.
    fn temp_path(&self) -> PathBuf {
        let mut name = self.path.file_name().map_or_else(|| OsString::from("log"), OsString::from);
        name.push(".compact");
        self.path.with_file_name(name)
    }

    fn io(&self, action: &'static str, source: io::Error) -> FileLogError {
        FileLogError::Io { path: self.path.clone(), offset: self.end, action, source }
    }
}

/// A file's header for `salt`.
fn header(salt: &[u8; 8]) -> Vec<u8> {
    let mut header = MAGIC.to_vec();
    header.extend_from_slice(salt);
    let crc = crc32fast::hash(&header);
    header.extend_from_slice(&crc.to_le_bytes());
    header
}

/// A random salt for a new file (std's hasher keys are random per process).
fn new_salt() -> [u8; 8] {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish().to_le_bytes()
}

/// The record of `item` in a file of `salt`, or `None` when it is too long
/// for one.
fn record(salt: &[u8; 8], item: &[u8]) -> Option<Vec<u8>> {
    let len = u32::try_from(item.len()).ok()?.to_le_bytes();
    let mut crc = crc32fast::Hasher::new();
    crc.update(salt);
    crc.update(&len);
    crc.update(item);
    let mut record = Vec::with_capacity(item.len() + FRAME);
    record.extend_from_slice(&len);
    record.extend_from_slice(item);
    record.extend_from_slice(&crc.finalize().to_le_bytes());
    Some(record)
}

/// How a file's records end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// At the end of the file.
    Clean,
    /// With a torn tail (what a power cut leaves of the last appends).
    Torn,
    /// With a damaged record that has a valid record after it.
    Damaged,
}

/// A log file's records, read without changing the file
/// ([`read_records`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Records {
    /// The file's salt.
    salt: [u8; 8],
    /// Where each whole record's item is in the bytes.
    pub items: Vec<std::ops::Range<usize>>,
    /// The end of the last whole record.
    pub end: usize,
    /// What follows it.
    pub tail: Tail,
}

/// Why [`read_records`] cannot read a file's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadError {
    /// The file does not start with [`MAGIC`]: not a log of this format.
    NotALog,
    /// The header's CRC fails: its salt cannot be trusted.
    DamagedHeader,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReadError::NotALog => {
                r#"not an envaware log file (it does not start with "envaware log v1\n")"#
            }
            ReadError::DamagedHeader => "the log file's header is damaged (its CRC fails)",
        })
    }
}

impl std::error::Error for ReadError {}

/// Reads a log file's bytes as records, as [`FileLog::open`] does but
/// without cutting anything: a reader's view (`envaware-sim replay` reads
/// a host's log with it). The items are `bytes[range]`.
///
/// # Errors
///
/// When the bytes do not start with [`MAGIC`], or the header's CRC fails.
pub fn read_records(bytes: &[u8]) -> Result<Records, ReadError> {
    let head = bytes.get(..HEADER).ok_or(ReadError::NotALog)?;
    if head[..MAGIC.len()] != MAGIC {
        return Err(ReadError::NotALog);
    }
    let mut salt = [0u8; 8];
    salt.copy_from_slice(&head[MAGIC.len()..MAGIC.len() + 8]);
    if header(&salt) != head {
        return Err(ReadError::DamagedHeader);
    }
    let (mut items, mut at) = (Vec::new(), HEADER);
    while let Some((item, end)) = record_at(&salt, bytes, at) {
        items.push(item);
        at = end;
    }
    let tail = if at == bytes.len() {
        Tail::Clean
    } else if (at + 1..bytes.len()).any(|later| record_at(&salt, bytes, later).is_some()) {
        Tail::Damaged
    } else {
        Tail::Torn
    };
    Ok(Records { salt, items, end: at, tail })
}

/// The item of the whole, valid record at `at`, and the record's end.
fn record_at(salt: &[u8; 8], bytes: &[u8], at: usize) -> Option<(std::ops::Range<usize>, usize)> {
    let len = bytes.get(at..at.checked_add(4)?)?;
    let len = u32::from_le_bytes(len.try_into().ok()?) as usize;
    let item = at + 4..(at + 4).checked_add(len)?;
    let end = item.end.checked_add(4)?;
    let stored = u32::from_le_bytes(bytes.get(item.end..end)?.try_into().ok()?);
    let mut crc = crc32fast::Hasher::new();
    crc.update(salt);
    crc.update(&bytes[at..item.end]);
    (crc.finalize() == stored).then_some((item, end))
}

/// Syncs the directory that holds `path`, so that a new name in it survives
/// a power cut (on Unix; elsewhere there is no such call).
fn sync_dir(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(())
    }
}

/// A [`Session`](envaware::journal::Session) appends its items to the
/// file, with the log's [`Sync`] policy.
impl envaware::journal::ItemStore for FileLog {
    type Error = FileLogError;
    async fn append(&mut self, item: &[u8]) -> Result<(), FileLogError> {
        FileLog::append(self, item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SALT: [u8; 8] = *b"saltsalt";

    fn file(items: &[&[u8]]) -> Vec<u8> {
        let mut bytes = header(&SALT);
        bytes.extend(items.iter().flat_map(|item| record(&SALT, item).unwrap()));
        bytes
    }

    #[test]
    fn a_record_is_length_item_and_crc_of_salt_and_both() {
        let r = record(&SALT, b"ab").unwrap();
        assert_eq!(&r[..6], b"\x02\0\0\0ab");
        assert_eq!(r[6..], crc32fast::hash(b"saltsalt\x02\0\0\0ab").to_le_bytes());
        // zlib's crc32 of "123456789" (the ISO-HDLC check value).
        assert_eq!(crc32fast::hash(b"123456789"), 0xcbf4_3926);
        assert_eq!(record(&SALT, b"").unwrap().len(), FRAME);
        // Another file's salt: the same record is not valid there.
        let other = *b"pepper!!";
        let mut bytes = file(&[]);
        bytes.extend(record(&other, b"ab").unwrap());
        assert_eq!(read_records(&bytes).unwrap().tail, Tail::Torn);
    }

    #[test]
    fn every_prefix_of_a_file_is_whole_records_and_a_torn_tail() {
        let bytes = file(&[b"one", b"", b"three", &[0, 0, 0, 0, 0xff]]);
        let ends = [11, 19, 32, 45].map(|e| e + HEADER);
        for cut in HEADER..=bytes.len() {
            let read = read_records(&bytes[..cut]).unwrap();
            let whole = ends.iter().filter(|&&e| e <= cut).count();
            assert_eq!(read.items.len(), whole, "cut {cut}");
            assert_eq!(read.end, if whole == 0 { HEADER } else { ends[whole - 1] }, "cut {cut}");
            let clean = if read.end == cut { Tail::Clean } else { Tail::Torn };
            assert_eq!(read.tail, clean, "cut {cut}");
        }
        // Shorter than the header, or another start: not a log.
        assert_eq!(read_records(&bytes[..HEADER - 1]), Err(ReadError::NotALog));
        let mut other = bytes.clone();
        other[0] = b'E';
        assert_eq!(read_records(&other), Err(ReadError::NotALog));
        // A salt damaged: refused, not every record cut as torn.
        let mut salted = bytes.clone();
        salted[MAGIC.len()] ^= 1;
        assert_eq!(read_records(&salted), Err(ReadError::DamagedHeader));
    }

    #[test]
    fn zeros_after_the_last_record_are_a_torn_tail() {
        let mut bytes = file(&[b"one", b"two"]);
        bytes.extend([0; 100]);
        assert_eq!(read_records(&bytes).unwrap().tail, Tail::Torn);
    }

    #[test]
    fn a_damaged_length_does_not_hide_the_records_after_it() {
        let mut bytes = file(&[b"one", b"two", b"three"]);
        let second = HEADER + 11;
        bytes[second + 3] = 0x7f; // the second record's length now runs past the end
        let read = read_records(&bytes).unwrap();
        assert_eq!(
            (read.items.len(), read.items[0].clone(), read.end, read.tail),
            (1, HEADER + 4..HEADER + 7, second, Tail::Damaged)
        );
        bytes[second + 3] = 0;
        bytes[second] = 1; // shorter: its CRC is now read from its item
        assert_eq!(read_records(&bytes).unwrap().tail, Tail::Damaged);
    }

    #[test]
    fn an_item_holding_a_record_of_another_salt_is_torn_like_any_other() {
        // A model's tool arguments may hold anything: a whole record with a
        // CRC a writer could compute without the salt.
        let mut inner = 3u32.to_le_bytes().to_vec();
        inner.extend_from_slice(b"abc");
        inner.extend(crc32fast::hash(&inner).to_le_bytes());
        let mut outer = Vec::from(*b"xx");
        outer.extend_from_slice(&inner);
        let bytes = file(&[b"one", &outer]);
        // Cut inside the outer record, just after the inner one: torn, not
        // damaged.
        let cut = bytes.len() - 4;
        assert_eq!(read_records(&bytes[..cut]).unwrap().tail, Tail::Torn);
    }
}
