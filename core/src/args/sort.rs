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
/// more.
pub(super) const WINDOW_KEYS: usize = 8192;

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
        common = key(x).iter().zip(first).take(common).take_while(|(a, b)| a == b).count();
    }
    let mut keyed: heapless::Vec<(u64, O), WINDOW_KEYS> = heapless::Vec::new();
    for &x in run.iter() {
        let rest = key(x).get(common..).unwrap_or(&[]);
        let window = rest.get(..8).unwrap_or(rest);
        let mut bytes = [0u8; 8];
        crate::text::copy_bytes(&mut bytes, window);
        if window.contains(&b'\\') || keyed.push((u64::from_be_bytes(bytes), x)).is_err() {
            return None;
        }
    }
    // By window only: within equal windows the keys decide, below.
    keyed.sort_unstable_by_key(|&(window, _)| window);
    for (slot, &(_, x)) in run.iter_mut().zip(keyed.iter()) {
        *slot = x;
    }
    let mut kept = 0;
    let mut i = 0;
    while let Some(&(window, _)) = keyed.get(i) {
        let ties = keyed.get(i..).unwrap_or(&[]).iter().take_while(|&&(w, _)| w == window).count().max(1);
        let end = i.saturating_add(ties);
        // Equal windows: sorted by key, then position, and the last of
        // equal keys kept.
        let mut unique = 0;
        if let Some(tie) = run.get_mut(i..end) {
            tie.sort_unstable_by(|&x, &y| cmp(x, y).then(x.cmp(&y)));
            unique = dedup_last(tie, &|x, y| cmp(x, y) == Ordering::Equal);
        }
        for from in i..i.saturating_add(unique) {
            if let Some(&x) = run.get(from) {
                if let Some(slot) = run.get_mut(kept) {
                    *slot = x;
                }
                kept += 1;
            }
        }
        i = end;
    }
    Some(kept)
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
