//! `FileLog` on real files: a round trip, a flipped byte in the middle,
//! compaction, and what its errors say.

use std::fs;
use std::path::PathBuf;

use envaware_host::{FileLog, FileLogError, Opened, Sync, TornTail, MAGIC};

/// The file's header: the magic and the salt.
const HEADER: usize = MAGIC.len() + 12;

/// A fresh directory for one test, under Cargo's target directory.
fn dir(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("file_log-{test}"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// Items of every shape: empty, binary, text, longer than a page.
fn items() -> Vec<Vec<u8>> {
    vec![
        b"{\"#\":0,\"log\":{}}".to_vec(),
        Vec::new(),
        vec![0, 0, 0, 0, 0xff, 0x0a],
        "é😀\n".as_bytes().to_vec(),
        (0..5000u32).map(|i| (i * 7) as u8).collect(),
    ]
}

fn append_all(log: &mut FileLog, items: &[Vec<u8>]) {
    for item in items {
        log.append(item).expect("appends");
    }
}

#[test]
fn items_appended_are_read_back_after_reopening() {
    for sync in [Sync::EveryItem, Sync::Never] {
        let path = dir(&format!("round_trip_{sync:?}")).join("session.log");
        let (mut log, opened) = FileLog::open(&path, sync).expect("creates");
        assert_eq!(opened, Opened { items: 0, torn: None });
        assert!(log.is_empty());
        append_all(&mut log, &items());
        log.sync().expect("syncs");
        let len = log.file_len();
        assert_eq!(len, fs::metadata(&path).unwrap().len());
        assert_eq!(len as usize, HEADER + items().iter().map(|i| i.len() + 8).sum::<usize>());
        assert_eq!(fs::read(&path).unwrap()[..MAGIC.len()], MAGIC);
        drop(log);
        let (mut log, opened) = FileLog::open(&path, sync).expect("reopens");
        assert_eq!(opened, Opened { items: 5, torn: None });
        assert!(log.items().eq(items().iter().map(Vec::as_slice)));
        assert_eq!(log.get(3), Some("é😀\n".as_bytes()));
        // Appending goes on after the items read.
        log.append(b"six").unwrap();
        drop(log);
        let (log, _) = FileLog::open(&path, sync).unwrap();
        assert_eq!(log.len(), 6);
        assert_eq!(log.items().last(), Some(&b"six"[..]));
    }
}

#[test]
fn a_torn_tail_is_cut_and_appending_goes_on_after_it() {
    let path = dir("torn").join("session.log");
    let (mut log, _) = FileLog::open(&path, Sync::EveryItem).unwrap();
    append_all(&mut log, &items()[..3]);
    let end = log.file_len();
    log.append(b"the last item").unwrap();
    drop(log);
    // A power cut in the last record: 5 of its 21 bytes reached the disk.
    let file = fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(end + 5).unwrap();
    drop(file);
    let (mut log, opened) = FileLog::open(&path, Sync::EveryItem).unwrap();
    assert_eq!(opened, Opened { items: 3, torn: Some(TornTail { offset: end, dropped_bytes: 5 }) });
    assert_eq!(fs::metadata(&path).unwrap().len(), end);
    log.append(b"after the cut").unwrap();
    drop(log);
    let (log, opened) = FileLog::open(&path, Sync::EveryItem).unwrap();
    assert_eq!(opened.torn, None);
    assert_eq!(log.items().last(), Some(&b"after the cut"[..]));
}

#[test]
fn a_flipped_byte_in_the_middle_is_refused_naming_its_record() {
    let path = dir("flipped").join("session.log");
    let (mut log, _) = FileLog::open(&path, Sync::Never).unwrap();
    append_all(&mut log, &items());
    drop(log);
    let good = fs::read(&path).unwrap();
    // The records' offsets after the header: 0, 24, 32, 46, 61 (the
    // 5000-byte item).
    let starts = [0u64, 24, 32, 46, 61].map(|s| s + HEADER as u64);
    let last = starts[4];
    // Every byte of the first four records, and some of the fifth's, but
    // not in the last record (a damaged last record is a torn tail); and
    // the header's magic and salt.
    let first = starts[0] as usize;
    for at in
        (0..first).chain(first..last as usize).chain([0, 1, 2, 3, 3000].map(|b| b + last as usize))
    {
        let mut bytes = good.clone();
        bytes[at] ^= 0x20;
        fs::write(&path, &bytes).unwrap();
        let record = starts.iter().rev().find(|&&s| s <= at as u64).copied();
        match FileLog::open(&path, Sync::Never) {
            // The magic: not a log; the salt or the header's CRC: damage at
            // byte 0 (read with a wrong salt, every record would look torn).
            Err(FileLogError::NotALog { path: named }) if at < MAGIC.len() => {
                assert_eq!(named, path, "byte {at}");
            }
            Err(FileLogError::Corrupt { path: named, offset: 0 }) if record.is_none() => {
                assert_eq!(named, path, "byte {at}");
            }
            Err(FileLogError::Corrupt { path: named, offset }) if record < Some(last) => {
                assert_eq!((named.as_path(), Some(offset)), (path.as_path(), record), "byte {at}");
            }
            Ok((log, opened)) if record == Some(last) => {
                // The last record damaged: a torn tail, cut.
                assert_eq!(log.len(), 4, "byte {at}");
                assert_eq!(opened.torn, Some(TornTail { offset: last, dropped_bytes: 5008 }));
                fs::write(&path, &good).unwrap();
                continue;
            }
            other => panic!("byte {at}: {other:?}"),
        }
        // Nothing was cut.
        assert_eq!(fs::read(&path).unwrap(), bytes, "byte {at}");
    }
    fs::write(&path, &good).unwrap();
    let mut bytes = good.clone();
    bytes[HEADER + 40] ^= 1;
    fs::write(&path, &bytes).unwrap();
    let error = FileLog::open(&path, Sync::Never).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}: damaged record at byte {}, with a valid record after it (not a torn tail: \
             nothing cut)",
            path.display(),
            HEADER + 32
        )
    );
}

#[test]
fn compaction_keeps_the_suffix_and_the_file_reopens() {
    let dir = dir("compact");
    let path = dir.join("session.log");
    let (mut log, _) = FileLog::open(&path, Sync::EveryItem).unwrap();
    append_all(&mut log, &items());
    // A temporary file left by a crash in an earlier compaction.
    fs::write(dir.join("session.log.compact"), b"stale").unwrap();
    log.compact(2).unwrap();
    assert!(log.items().eq(items()[2..].iter().map(Vec::as_slice)));
    assert!(!dir.join("session.log.compact").exists());
    // The log goes on in the new file.
    log.append(b"after").unwrap();
    let len = log.file_len();
    drop(log);
    assert_eq!(fs::metadata(&path).unwrap().len(), len);
    let (mut log, opened) = FileLog::open(&path, Sync::EveryItem).unwrap();
    assert_eq!(opened, Opened { items: 4, torn: None });
    assert_eq!(log.get(0), Some(&items()[2][..]));
    assert_eq!(log.get(3), Some(&b"after"[..]));
    // Keeping from past the end keeps nothing; the log still appends.
    log.compact(10).unwrap();
    assert!(log.is_empty());
    log.append(b"alone").unwrap();
    drop(log);
    let (log, _) = FileLog::open(&path, Sync::EveryItem).unwrap();
    assert!(log.items().eq([&b"alone"[..]]));
}

#[test]
fn errors_name_the_file() {
    let dir = dir("errors");
    // A directory is not a log.
    let error = FileLog::open(&dir, Sync::Never).unwrap_err();
    assert!(matches!(error, FileLogError::Io { action: "open", offset: 0, .. }), "{error:?}");
    assert!(error.to_string().starts_with(&format!("{}: open at byte 0: ", dir.display())));
    assert!(std::error::Error::source(&error).is_some());
    // A file that is not a log (a log of before the file's header, say).
    let text = dir.join("items.jsonl");
    fs::write(&text, b"{\"#\":0,\"log\":{\"version\":2}}\n").unwrap();
    let error = FileLog::open(&text, Sync::Never).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}: not an envaware log file (it does not start with \"envaware log v1\\n\")",
            text.display()
        )
    );
    // A missing directory.
    let missing = dir.join("no such dir").join("session.log");
    let error = FileLog::open(&missing, Sync::Never).unwrap_err();
    assert!(error.to_string().contains("no such dir"), "{error}");
}
