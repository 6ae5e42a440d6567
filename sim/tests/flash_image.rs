//! `replay --flash` on raw images of a device's flash region (issue 33):
//! an image padded with erased pages reads the device's items, and every
//! item is read by the journal's own reader of items.

use std::process::Command;

use embassy_futures::block_on;
use envaware::journal::{Event, ItemError, ItemKind, ItemReader, Journal, LogError};
use envaware::{AgentContext, Config, Engine, StepInput, TaskCounts, Timestamp, ToolResultState};
use envaware_flashlog::{SessionLog, MAX_ITEM, PAGE};
use envaware_sim::flash::{items as log_items, FlashError, RamFlash};

const SIM: &str = env!("CARGO_BIN_EXE_envaware-sim");
type Context<'a> = AgentContext<'a, 6, 32, 2048>;

/// A session logged as the firmware logs it: the shipped `SessionLog` over
/// `pages` pages of RAM flash, compacted by its `make_room` before each
/// event and step. Returns the region's bytes and the log's items as the
/// device's queue reads them back.
fn device_region(pages: usize, rounds: u32) -> (Vec<u8>, Vec<Vec<u8>>) {
    let engine = Engine::new(Config::default()).unwrap();
    let mut context = Context::new(&engine, "Sprout");
    let mut journal = Journal::new(&context);
    let mut log = SessionLog::new(RamFlash(vec![0xFF; pages * PAGE]));
    let (mut buf, mut hint, mut room) = ([0u8; MAX_ITEM], [0u8; 1024], [0u8; MAX_ITEM]);
    let n = journal.start(&context, &mut buf).unwrap();
    block_on(log.append(&buf[..n])).unwrap();
    for round in 0..rounds {
        let events = [
            Event::User { name: "operator", text: "" },
            Event::ToolCall { id: "c1", name: "OpenVent", input: "{\"vent\": 2}" },
            Event::ToolResult { id: "c1", name: "OpenVent", state: ToolResultState::Error },
        ];
        for event in &events {
            block_on(log.make_room(&mut journal, &context, &mut room)).unwrap();
            let items = journal.record(&mut context, event, &mut buf).unwrap();
            for item in items.iter(&buf) {
                block_on(log.append(item)).unwrap();
            }
        }
        block_on(log.make_room(&mut journal, &context, &mut room)).unwrap();
        let step = StepInput {
            tasks: TaskCounts { pending: u64::from(round % 3), in_progress: 0 },
            cur_iter: 0,
            input_tokens: 900 + i64::from(round),
            context_size: 128_000,
        };
        let now = Some(Timestamp::from_unix_seconds(1_784_687_400 + 600 * i64::from(round)));
        let (_, items) =
            journal.step(&mut context, &step, now, &mut (), &mut hint, &mut buf).unwrap();
        for item in items.iter(&buf) {
            block_on(log.append(item)).unwrap();
        }
    }
    let region = log.flash().0.clone();
    // The device's own view: its queue over exactly its region.
    let mut items = Vec::new();
    let mut copy = SessionLog::new(RamFlash(region.clone()));
    block_on(copy.read_items(&mut buf, |item| {
        items.push(item.to_vec());
        Ok::<_, ()>(())
    }))
    .unwrap();
    (region, items)
}

/// Where `item` lies in `image`.
fn offset(image: &[u8], item: &[u8]) -> usize {
    image.windows(item.len()).position(|w| w == item).expect("the item is in the image")
}

/// The kind of an item, as its first byte says.
fn kind(item: &[u8]) -> ItemKind {
    ItemReader::new().read(item).unwrap().kind
}

/// issue 33: the device's 8 KiB padded to 256 KiB replayed 2 of its 3
/// steps: the queue's pages after its wrap came after the erased padding,
/// where the queue's reader stops. Any number of erased pages after the
/// region reads the same items.
#[test]
fn a_flash_image_padded_with_erased_pages_reads_the_same_items() {
    let (region, items) = device_region(8, 80);
    // The queue wrapped: its newest item lies before its oldest.
    let (oldest, newest) = (&items[0], items.last().unwrap());
    assert!(offset(&region, newest) < offset(&region, oldest), "the queue did not wrap");
    let headers = items.iter().filter(|item| kind(item) == ItemKind::Header).count();
    assert!(items.len() > 20 && headers > 0, "{items:?}");
    assert_eq!(log_items(&region).unwrap(), items);
    for pages in [9, 10, 16, 64, 256] {
        let mut padded = region.clone();
        padded.resize(pages * PAGE, 0xFF);
        assert_eq!(log_items(&padded).unwrap(), items, "padded to {pages} pages");
    }
    // And through the command line, as `cargo xtask demo` runs it.
    let mut padded = region.clone();
    padded.resize(256 * PAGE, 0xFF);
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("padded-flash.bin");
    std::fs::write(&path, &padded).unwrap();
    let out = Command::new(SIM)
        .args(["replay", "--json", "--flash", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let steps = items.iter().filter(|item| kind(item) == ItemKind::Step).count();
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), steps);

    // A queue that never wrapped, and one that holds nothing, padded alike.
    let (short, items) = device_region(8, 2);
    for pages in [8, 9, 256] {
        let mut padded = short.clone();
        padded.resize(pages * PAGE, 0xFF);
        assert_eq!(log_items(&padded).unwrap(), items, "padded to {pages} pages");
    }
    assert!(log_items(&vec![0xFF; 3 * PAGE]).unwrap().is_empty());
}

/// A power cut between the queue closing its newest page and opening the
/// next leaves no page being written: over the region without its erased
/// pages every page is closed, which the queue refuses as corrupted. It is
/// read over one more erased page, as the device's region reads.
#[test]
fn an_image_whose_written_pages_are_all_closed_reads_as_the_device_s_region() {
    let mut log = SessionLog::new(RamFlash(vec![0xFF; 4 * PAGE]));
    let mut n = 0u16;
    // Items until the queue writes its third page: user messages of a
    // 200-byte name (kind 2, the number's low bits, the name's length).
    while log.flash().0[2 * PAGE] == 0xFF || !n.is_multiple_of(3) {
        let mut item = vec![2];
        item.extend_from_slice(&n.to_le_bytes());
        item.extend_from_slice(&[0xC8, 0x01]);
        item.extend_from_slice(&[b'x'; 200]);
        block_on(log.append(&item)).unwrap();
        n += 1;
    }
    // The cut: the third page closed (its end marker written), the fourth
    // not yet opened.
    let mut region = log.flash().0.clone();
    region[3 * PAGE - 4..3 * PAGE].fill(0);
    let mut items = Vec::new();
    let mut buf = [0u8; MAX_ITEM];
    let mut device = SessionLog::new(RamFlash(region.clone()));
    block_on(device.read_items(&mut buf, |item| {
        items.push(item.to_vec());
        Ok::<_, ()>(())
    }))
    .unwrap();
    assert_eq!(items.len(), usize::from(n));
    // The queue alone over the three closed pages refuses them.
    let mut closed = SessionLog::new(RamFlash(region[..3 * PAGE].to_vec()));
    assert!(block_on(closed.read_items(&mut buf, |_| Ok::<_, ()>(()))).is_err());
    for pages in [4, 5, 64] {
        let mut padded = region.clone();
        padded.resize(pages * PAGE, 0xFF);
        assert_eq!(log_items(&padded).unwrap(), items, "padded to {pages} pages");
    }
    assert_eq!(log_items(&region[..3 * PAGE]).unwrap(), items);
}

#[test]
fn an_image_that_is_not_whole_pages_is_refused_naming_its_size_and_the_page() {
    for size in [0, 1000, 8 * PAGE + 4] {
        let e = log_items(&vec![0xFF; size]).unwrap_err();
        assert_eq!(e, FlashError::Size(size));
        assert_eq!(
            e.to_string(),
            format!("a flash image of {size} bytes: expected a whole number of 1024-byte pages, at least 1")
        );
    }
}

/// A region whose queue holds `items`, as they are (a device would never
/// write these: the queue's CRC is right, the journal's reader must refuse
/// them).
fn image_of(items: &[&[u8]]) -> Vec<u8> {
    let mut log = SessionLog::new(RamFlash(vec![0xFF; 4 * PAGE]));
    for item in items {
        block_on(log.append(item)).unwrap();
    }
    log.flash().0.clone()
}

/// The flash path reads items with the journal's own reader of items: an
/// item of the text form (format versions 1 and 2), an unknown kind, one cut
/// short, and a gap in the numbers (their low 16 bits wrap) are refused.
#[test]
fn flash_items_are_read_by_the_journal_s_reader_of_items() {
    let reply = |seq: u16| {
        let [lo, hi] = seq.to_le_bytes();
        vec![7, lo, hi]
    };
    let item = |index, kind| FlashError::Item(LogError { index, kind });
    let e = log_items(&image_of(&[br##"{"#":0,"reply":null}"##])).unwrap_err();
    assert_eq!(e, item(0, ItemError::TextForm));
    assert_eq!(
        e.to_string(),
        "the flash image's item 0: an item of the text form of format versions 1 and 2 (JSON): this build reads version 3"
    );
    let e = log_items(&image_of(&[&reply(0), &[0x40, 1, 0]])).unwrap_err();
    assert_eq!(e, item(1, ItemError::UnknownEvent));
    let e = log_items(&image_of(&[&reply(0), &[7, 1]])).unwrap_err();
    assert_eq!(e, item(1, ItemError::Field("number")));
    // A gap; the low 16 bits wrap as the journal writes them.
    let e = log_items(&image_of(&[&reply(0), &reply(2)])).unwrap_err();
    assert_eq!(e, item(1, ItemError::Gap { expected: 1, found: 2 }));
    assert_eq!(
        e.to_string(),
        "the flash image's item 1: item number 2, expected 1: an item was lost"
    );
    let wrapped = log_items(&image_of(&[&reply(u16::MAX), &reply(0)])).unwrap();
    assert_eq!(wrapped.len(), 2);
}
