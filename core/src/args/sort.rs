//! An object's members in key order: a heapsort (the device's sort, see
//! `Offset::sort`), a sort by windows of the keys' bytes (the host's, for
//! many keys) and keeping the last of each run of equal keys, as Python's
//! `dict` keeps the last duplicate.

use core::cmp::Ordering;

use super::Offset;

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

/// Keys from which [`by_window`] sorts the sort keys a byte at a time (a
/// radix sort: a few linear passes); fewer are sorted by comparison, which
/// costs less than a pass's 256 counters.
pub(super) const RADIX_KEYS: usize = 32;

/// Orders `run`, the keys of one object in document order, by `cmp` (the
/// keys' order), keeping the last of equal keys (moved to the front), and
/// returns how many are kept; quickly when there are many (the host): by
/// six bytes of each key read as one big-endian integer (a window), from
/// where the keys stop sharing a prefix (zero past a key's end: no key
/// holds a raw NUL), then by `cmp` and position only among equal windows.
/// Raw UTF-8 bytes order as code points, so this is `cmp`'s order wherever
/// no escape precedes a window's end, and keys whose windows differ are
/// different keys; at such an escape it returns `None` and leaves the
/// order to the caller. `span` gives a key's content (without its quotes)
/// in `text`.
#[inline(never)]
pub(super) fn by_window<O: Offset>(
    text: &[u8],
    span: &dyn Fn(O) -> (usize, usize),
    run: &mut [O],
    cmp: &dyn Fn(O, O) -> Ordering,
) -> Option<usize> {
    let Some(&first) = run.first() else {
        return Some(0);
    };
    let (first_start, first_end) = span(first);
    let first_key = text.get(first_start..first_end).unwrap_or(&[]);
    let mut common = first_key.iter().position(|&c| c == b'\\').unwrap_or(first_key.len());
    // Each key's span, kept (as two 32-bit halves) for its window below.
    let mut sorted: heapless::Vec<u64, WINDOW_KEYS> = heapless::Vec::new();
    for &x in run.iter() {
        let (start, end) = span(x);
        // Most keys share the whole prefix found so far: one comparison.
        if !same_bytes(text, start, first_start, common) {
            let k = text.get(start..end).unwrap_or(&[]);
            common = k.iter().zip(first_key).take(common).take_while(|(a, b)| a == b).count();
        }
        sorted
            .push(u64::from(u32::try_from(start).ok()?) << 32 | u64::from(u32::try_from(end).ok()?))
            .ok()?;
    }
    // Each key's sort key: its window (where the keys differ past it, a
    // coarser order: the keys decide among equal sort keys, below) over
    // its position in `run` (16 bits). One array of integers, read in
    // order by every pass of the sort.
    let first_window = window_at(text, first_start.saturating_add(common), first_end)?;
    let mut varying = 0;
    for (i, slot) in sorted.iter_mut().enumerate() {
        let (start, end) =
            (usize::try_from(*slot >> 32).ok()?, usize::try_from(*slot & 0xffff_ffff).ok()?);
        let window = window_at(text, start.saturating_add(common), end)?;
        varying |= window ^ first_window;
        *slot = window | u64::try_from(i).ok()?;
    }
    // Stably by sort key, then (the same) by position.
    let mut spare: heapless::Vec<u64, WINDOW_KEYS> = heapless::Vec::new();
    if sorted.len() < RADIX_KEYS {
        sorted.sort_unstable();
    } else {
        spare.resize(sorted.len(), 0).ok()?;
        radix_sort(&mut sorted, varying, &mut spare);
    }
    // The keys in that order, into the front of `run` (a copy of it in
    // the spare): a key whose sort key no other has is a key of its own;
    // among equal sort keys the keys are sorted by key, then position,
    // and the last of equal keys kept.
    spare.clear();
    for &x in run.iter() {
        spare.push(u64::try_from(x.index()).ok()?).ok()?;
    }
    let key_at = |v: u64| {
        spare
            .get(usize::try_from(v & POSITION).ok()?)
            .and_then(|&x| O::of(usize::try_from(x).ok()?))
    };
    let mut kept = 0;
    let mut i = 0;
    while let Some(&v) = sorted.get(i) {
        let mut end = i.saturating_add(1);
        while sorted.get(end).is_some_and(|&u| (u ^ v) & !POSITION == 0) {
            end += 1;
        }
        let ties = end - i;
        if ties == 1 {
            if let (Some(slot), Some(x)) = (run.get_mut(kept), key_at(v)) {
                *slot = x;
            }
            kept += 1;
        } else if let (Some(tie), Some(from)) =
            (run.get_mut(kept..kept.saturating_add(ties)), sorted.get(i..end))
        {
            // The keys are read from the copy in the spare, so writing
            // over `run` loses none.
            for (slot, &u) in tie.iter_mut().zip(from) {
                *slot = key_at(u).unwrap_or(*slot);
            }
            tie.sort_unstable_by(|&x, &y| cmp(x, y).then(x.cmp(&y)));
            kept += dedup_last(tie, &|x, y| cmp(x, y) == Ordering::Equal);
        }
        i = end;
    }
    Some(kept)
}

/// A sort key's low bits: the key's position in its run.
const POSITION: u64 = 0xffff;

/// Bytes of a key in its sort key: the rest of a `u64` holds its position.
const WINDOW: usize = 6;

/// The `WINDOW` bytes of `text` from `start`, the first highest, as the
/// top of a `u64` (its low bytes zero), zero from `end` on; `None` when
/// they hold a backslash (an escape: raw bytes would not order as the code
/// points it stands for).
fn window_at(text: &[u8], start: usize, end: usize) -> Option<u64> {
    let len = end.saturating_sub(start).min(WINDOW);
    let window = match word_at(text, start) {
        // The key's end, its quote and what follows it are masked off.
        Some(word) => word & !(u64::MAX >> (len * 8)),
        None => {
            let mut bytes = [0u8; 8];
            crate::text::copy_bytes(
                &mut bytes,
                text.get(start..start.saturating_add(len)).unwrap_or(&[]),
            );
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

/// The eight bytes of `text` from `at`, the first highest, if it holds
/// them.
fn word_at(text: &[u8], at: usize) -> Option<u64> {
    let bytes = text.get(at..at.checked_add(8)?)?;
    <[u8; 8]>::try_from(bytes).ok().map(u64::from_be_bytes)
}

/// Whether the `len` bytes of `text` from `a` are those from `b`, eight at
/// a time; `false` where `text` does not hold them all.
fn same_bytes(text: &[u8], a: usize, b: usize, len: usize) -> bool {
    let mut i = 0;
    while i < len {
        let (Some(x), Some(y)) =
            (word_at(text, a.saturating_add(i)), word_at(text, b.saturating_add(i)))
        else {
            return matches!((text.get(a..a.saturating_add(len)), text.get(b..b.saturating_add(len))), (Some(x), Some(y)) if x == y);
        };
        let rest = len - i;
        if rest < 8 {
            return (x ^ y) & !(u64::MAX >> (rest * 8)) == 0;
        }
        if x != y {
            return false;
        }
        i += 8;
    }
    true
}

/// Sorts `values` by their bytes named in `digits`, stably: a
/// least-significant-byte-first radix sort over those bytes only (the
/// others need no pass), through `spare` (as long as `values`).
pub(super) fn radix_sort(values: &mut [u64], digits: u64, spare: &mut [u64]) {
    let (mut from, mut to) = (values, spare);
    let mut in_spare = false;
    for shift in (0..64).step_by(8) {
        if (digits >> shift) & 0xff == 0 {
            continue;
        }
        let byte = |v: u64| usize::from((v >> shift) as u8);
        let mut starts = [0usize; 256];
        for &v in from.iter() {
            if let Some(count) = starts.get_mut(byte(v)) {
                *count += 1;
            }
        }
        let mut total = 0;
        for start in starts.iter_mut() {
            let count = *start;
            *start = total;
            total += count;
        }
        for &v in from.iter() {
            if let Some(start) = starts.get_mut(byte(v)) {
                if let Some(slot) = to.get_mut(*start) {
                    *slot = v;
                }
                *start += 1;
            }
        }
        core::mem::swap(&mut from, &mut to);
        in_spare = !in_spare;
    }
    // An odd number of passes left the order in the spare.
    if in_spare {
        for (slot, &v) in to.iter_mut().zip(from.iter()) {
            *slot = v;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared-prefix check says "the same" exactly when the bytes are,
    /// at any offsets and lengths (in whole words, in a part of one, and
    /// near the text's end, where it compares slices).
    #[test]
    fn same_bytes_is_a_comparison_of_the_bytes() {
        let text = b"field_0001\"field_0002\"fielz_0001\"field_00012345678field_0001";
        for a in 0..text.len() {
            for b in 0..text.len() {
                for len in 0..=20 {
                    let want = matches!((text.get(a..a + len), text.get(b..b + len)), (Some(x), Some(y)) if x == y);
                    assert_eq!(same_bytes(text, a, b, len), want, "a {a}, b {b}, len {len}");
                }
            }
        }
    }
}
