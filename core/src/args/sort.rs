//! An object's members in key order: a heapsort (the device's sort, see
//! `Offset::sort`) and keeping the last of each run of equal keys, as
//! Python's `dict` keeps the last duplicate.

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
