//! An object's members in key order: a heapsort (the device's sort, see
//! `Offset::sort`), a sort by windows of the keys' bytes (the host's, for
//! many keys) and keeping the last of each run of equal keys, as Python's
//! `dict` keeps the last duplicate.

use core::cmp::Ordering;

/// Sorts `v` by `less`, in place, with no recursion and no panic: the
/// stack stays a few words whatever the length.
pub(super) fn heapsort<T: Copy>(v: &mut [T], less: impl Fn(T, T) -> bool) {
    heap(v, &less);
}

/// [`heapsort`], one copy for every order: the order is a `dyn` closure.
fn heap<T: Copy>(v: &mut [T], less: &dyn Fn(T, T) -> bool) {
    let len = v.len();
    let mut i = len / 2;
    while i > 0 {
        i -= 1;
        sift_down(v, i, len, less);
    }
    let mut end = len;
    while end > 1 {
        end -= 1;
        swap(v, 0, end);
        sift_down(v, 0, end, less);
    }
}

fn sift_down<T: Copy>(v: &mut [T], mut root: usize, end: usize, less: &dyn Fn(T, T) -> bool) {
    loop {
        let mut child = root.saturating_mul(2).saturating_add(1);
        if child >= end {
            return;
        }
        let (Some(&left), Some(&parent)) = (v.get(child), v.get(root)) else {
            return;
        };
        let mut larger = left;
        if let Some(&right) = v.get(child + 1).filter(|_| child + 1 < end) {
            if less(left, right) {
                child += 1;
                larger = right;
            }
        }
        if !less(parent, larger) {
            return;
        }
        swap(v, root, child);
        root = child;
    }
}

/// `slice::swap` without its bounds panic.
pub(super) fn swap<T: Copy>(v: &mut [T], a: usize, b: usize) {
    if let (Some(&x), Some(&y)) = (v.get(a), v.get(b)) {
        if let Some(slot) = v.get_mut(a) {
            *slot = y;
        }
        if let Some(slot) = v.get_mut(b) {
            *slot = x;
        }
    }
}
/// Keeps the last entry of each run of equal keys (`same`) in the sorted
/// `run`, moved to the front; returns how many are kept.
pub(super) fn dedup_last<O: Copy>(run: &mut [O], same: &dyn Fn(O, O) -> bool) -> usize {
    let mut kept = 0;
    let mut i = 0;
    while let Some(&first) = run.get(i) {
        let mut last = first;
        i += 1;
        while let Some(&next) = run.get(i) {
            if !same(first, next) {
                break;
            }
            last = next;
            i += 1;
        }
        if let Some(slot) = run.get_mut(kept) {
            *slot = last;
        }
        kept += 1;
    }
    kept
}

/// Keys at most that [`by_window`] sorts: the host's large tape holds no
/// more (so an index fits 16 bits).
pub(super) const WINDOW_KEYS: usize = 8192;

/// Keys from which [`by_window`] sorts the windows a byte at a time (a
/// radix sort: a few linear passes); fewer are sorted by comparison, which
/// costs less than a pass's 256 counters.
pub(super) const RADIX_KEYS: usize = 32;

/// Orders `run`, the keys of one object in document order, by `cmp` (the
/// keys' order), keeping the last of equal keys (moved to the front), and
/// returns how many are kept; quickly when there are many (the host): by
/// eight bytes of each key read as one big-endian integer, from where the
/// keys stop sharing a prefix (zero past a key's end: no key holds a raw
/// NUL), then by `cmp` and position only among equal windows. Raw UTF-8
/// bytes order as code points, so this is `cmp`'s order wherever no escape
/// precedes a window's end, and keys whose windows differ are different
/// keys; at such an escape it returns `None` and leaves the order to the
/// caller. `span` gives a key's content (without its quotes) in `text`.
#[inline(never)]
pub(super) fn by_window<O: Copy + Ord>(
    text: &[u8],
    span: &dyn Fn(O) -> (usize, usize),
    run: &mut [O],
    cmp: &dyn Fn(O, O) -> Ordering,
) -> Option<usize> {
    let key = |x: O| {
        let (start, end) = span(x);
        text.get(start..end).unwrap_or(&[])
    };
    let Some(&first) = run.first() else {
        return Some(0);
    };
    let first = key(first);
    let mut common = first.iter().position(|&c| c == b'\\').unwrap_or(first.len());
    for &x in run.iter() {
        let k = key(x);
        // Most keys share the whole prefix found so far: one comparison.
        if k.get(..common) != first.get(..common) {
            common = k.iter().zip(first).take(common).take_while(|(a, b)| a == b).count();
        }
    }
    let mut windows: heapless::Vec<u64, WINDOW_KEYS> = heapless::Vec::new();
    let mut keys: heapless::Vec<O, WINDOW_KEYS> = heapless::Vec::new();
    let mut order: heapless::Vec<u16, WINDOW_KEYS> = heapless::Vec::new();
    // The bytes in which some window differs from the first: the only
    // ones the radix sort has to pass over.
    let mut varying = 0;
    for (i, &x) in run.iter().enumerate() {
        let window = window_at(key(x), common)?;
        varying |= window ^ windows.first().copied().unwrap_or(window);
        windows.push(window).ok()?;
        keys.push(x).ok()?;
        order.push(u16::try_from(i).ok()?).ok()?;
    }
    // By window only, stably (document order among equal windows): within
    // equal windows the keys decide, below.
    let window = |i: u16| windows.get(usize::from(i)).copied().unwrap_or(0);
    if order.len() < RADIX_KEYS {
        order.sort_unstable_by_key(|&i| (window(i), i));
    } else {
        let mut spare: heapless::Vec<u16, WINDOW_KEYS> = heapless::Vec::new();
        spare.resize(order.len(), 0).ok()?;
        radix_sort(&windows, varying, &mut order, &mut spare);
    }
    // The keys in window order, into the front of `run` (its entries are
    // in `keys`): a key whose window no other has is a key of its own;
    // among equal windows the keys are sorted by key, then position, and
    // the last of equal keys kept.
    let key_at = |i: u16| keys.get(usize::from(i)).copied();
    let mut kept = 0;
    let mut i = 0;
    while let Some(&at) = order.get(i) {
        let w = window(at);
        let ties = order.get(i..).unwrap_or(&[]).iter().take_while(|&&j| window(j) == w).count().max(1);
        let end = i.saturating_add(ties);
        if ties == 1 {
            if let (Some(slot), Some(x)) = (run.get_mut(kept), key_at(at)) {
                *slot = x;
            }
            kept += 1;
        } else if let (Some(tie), Some(from)) = (run.get_mut(kept..kept.saturating_add(ties)), order.get(i..end)) {
            // `kept <= i`: the slots written are of keys already placed.
            for (slot, &j) in tie.iter_mut().zip(from) {
                *slot = key_at(j).unwrap_or(*slot);
            }
            tie.sort_unstable_by(|&x, &y| cmp(x, y).then(x.cmp(&y)));
            kept += dedup_last(tie, &|x, y| cmp(x, y) == Ordering::Equal);
        }
        i = end;
    }
    Some(kept)
}

/// The eight bytes of `key` from `from`, the first highest, zero past its
/// end; `None` when they hold a backslash (an escape: raw bytes would not
/// order as the code points it stands for).
fn window_at(key: &[u8], from: usize) -> Option<u64> {
    let rest = key.get(from..).unwrap_or(&[]);
    let window = match rest.get(..8).and_then(|w| <[u8; 8]>::try_from(w).ok()) {
        Some(bytes) => u64::from_be_bytes(bytes),
        None => {
            let mut bytes = [0u8; 8];
            crate::text::copy_bytes(&mut bytes, rest);
            u64::from_be_bytes(bytes)
        }
    };
    // A byte equal to `\` is a zero byte of `window ^ lanes('\\')` (the
    // padding's zeros are not); a zero byte is found exactly by the borrow
    // trick when only its presence is asked.
    const ONES: u64 = u64::MAX / 0xff;
    let x = window ^ (ONES * u64::from(b'\\'));
    (x.wrapping_sub(ONES) & !x & (ONES << 7) == 0).then_some(window)
}

/// Sorts `order`, indices into `windows`, by their windows, stably: a
/// least-significant-byte-first radix sort over the bytes in `varying`
/// (those in which some windows differ), through `spare` (as long as
/// `order`).
pub(super) fn radix_sort(windows: &[u64], varying: u64, order: &mut [u16], spare: &mut [u16]) {
    let (mut from, mut to) = (order, spare);
    let mut in_spare = false;
    for shift in (0..64).step_by(8) {
        if (varying >> shift) & 0xff == 0 {
            continue;
        }
        let byte = |i: u16| windows.get(usize::from(i)).map_or(0, |w| usize::from((w >> shift) as u8));
        let mut starts = [0usize; 256];
        for &i in from.iter() {
            if let Some(count) = starts.get_mut(byte(i)) {
                *count += 1;
            }
        }
        let mut total = 0;
        for start in starts.iter_mut() {
            let count = *start;
            *start = total;
            total += count;
        }
        for &i in from.iter() {
            if let Some(start) = starts.get_mut(byte(i)) {
                if let Some(slot) = to.get_mut(*start) {
                    *slot = i;
                }
                *start += 1;
            }
        }
        core::mem::swap(&mut from, &mut to);
        in_spare = !in_spare;
    }
    // An odd number of passes left the order in the spare.
    if in_spare {
        for (slot, &i) in to.iter_mut().zip(from.iter()) {
            *slot = i;
        }
    }
}

/// Orders `run`, the keys of one object in document order, by `cmp`, in
/// place, keeping the last of equal keys: each key is compared backwards
/// with those kept so far, so keys already in order cost one comparison
/// each and no separate check or deduplication. Quadratic in the worst
/// case: for the few keys of a device's tape. Returns how many are kept.
pub(super) fn insert_last<O: Copy>(run: &mut [O], cmp: &dyn Fn(O, O) -> Ordering) -> usize {
    let mut kept = 0usize;
    for i in 0..run.len() {
        let Some(&x) = run.get(i) else { break };
        let mut at = kept;
        let mut order = Ordering::Less;
        while let Some(&y) = at.checked_sub(1).and_then(|before| run.get(before)) {
            order = cmp(y, x);
            if order != Ordering::Greater {
                break;
            }
            at -= 1;
        }
        if order == Ordering::Equal {
            // A later duplicate takes the earlier one's place: Python
            // keeps the last value.
            if let Some(slot) = at.checked_sub(1).and_then(|before| run.get_mut(before)) {
                *slot = x;
            }
            continue;
        }
        let mut m = kept;
        while m > at {
            if let Some(&moved) = run.get(m - 1) {
                if let Some(slot) = run.get_mut(m) {
                    *slot = moved;
                }
            }
            m -= 1;
        }
        if let Some(slot) = run.get_mut(at) {
            *slot = x;
        }
        kept += 1;
    }
    kept
}
