//! The memory one file's conversion may take: a global allocator that counts, per thread, the
//! bytes held while a file is converted and chunked, for hosts that install it (the CLI does:
//! `#[global_allocator] static A: ConversionAllocator = ConversionAllocator;`).
//!
//! Some inputs make a parser's memory grow far past the file, in code that has no bound of its
//! own and cannot be stopped from outside: a PDF whose compressed stream inflates a thousand
//! times over (1 MB of it held 2 GB in lopdf), or whatever the next format brings. Past the
//! budget the file is set aside and the process's policy applied, exactly as for a runaway
//! tree-sitter parse (see `sync::set_aside`); if the policy returns, the conversion goes on and
//! is refused. Without the allocator installed, nothing is counted and nothing changes.

// A global allocator is raw pointers and layouts; this module is core's one use.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Memory one conversion may hold, whatever the file's size...
const FLOOR: u64 = 1 << 30;
/// ...plus this much per byte of the file. Real files hold 13-53 bytes per byte while they are
/// converted and chunked (the corpora's files over 50 KB; bashref.pdf 14, bashref.html 13), at
/// most 11 MB; a compressed stream can inflate a thousand-fold.
const PER_BYTE: u64 = 128;

/// The system allocator, counting per thread (see the module docs).
#[derive(Debug, Default, Clone, Copy)]
pub struct ConversionAllocator;

/// One thread's count, in one thread-local so an allocation costs one lookup. Values are
/// absolute counts of this thread's live bytes.
struct Counter {
    /// Bytes this thread allocated less those it freed (signed: blocks move between threads).
    live: Cell<i64>,
    /// The count past which the watched conversion is set aside; `i64::MAX` when none is
    /// watched or it already was.
    limit: Cell<i64>,
    /// The highest count since the watch began.
    peak: Cell<i64>,
}

thread_local! {
    static COUNTER: Counter = const {
        Counter {
            live: Cell::new(0),
            limit: Cell::new(i64::MAX),
            peak: Cell::new(0),
        }
    };
    /// The watched conversion's start and budget, and whether it tripped: read off the hot path.
    static WATCH: Cell<Option<Watch>> = const { Cell::new(None) };
}

#[derive(Debug, Clone, Copy)]
struct Watch {
    baseline: i64,
    budget: u64,
    tripped: bool,
}

// SAFETY: every call goes straight to `System` with the caller's arguments; the counting only
// reads and writes this thread's cells, which need no allocation.
unsafe impl GlobalAlloc for ConversionAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given.
        let block = unsafe { System.alloc(layout) };
        if !block.is_null() {
            count(layout.size() as i64);
        }
        block
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given.
        let block = unsafe { System.alloc_zeroed(layout) };
        if !block.is_null() {
            count(layout.size() as i64);
        }
        block
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: forwarded as given.
        unsafe { System.dealloc(block, layout) };
        count(-(layout.size() as i64));
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as given.
        let moved = unsafe { System.realloc(block, layout, new_size) };
        if !moved.is_null() {
            count(new_size as i64 - layout.size() as i64);
        }
        moved
    }
}

/// Adds `delta` to this thread's count; past a watch's limit, sets the file aside once.
#[inline]
fn count(delta: i64) {
    let passed = COUNTER.try_with(|counter| {
        let live = counter.live.get() + delta;
        counter.live.set(live);
        if delta > 0 && live > counter.peak.get() {
            counter.peak.set(live);
        }
        // Off before the policy runs: its own allocations must not trip it again.
        let passed = delta > 0 && live > counter.limit.get();
        if passed {
            counter.limit.set(i64::MAX);
        }
        passed
    });
    if passed == Ok(true) {
        trip();
    }
}

#[cold]
fn trip() {
    let Ok(Some(mut watch)) = WATCH.try_with(Cell::get) else {
        return;
    };
    watch.tripped = true;
    let _ = WATCH.try_with(|w| w.set(Some(watch)));
    crate::sync::set_aside::set_aside_current(runaway_reason(watch.budget));
}

fn runaway_reason(budget: u64) -> String {
    format!(
        "converting it passed the memory bound of {} MiB (a compressed stream that inflates \
         far past the file, or a parser running away)",
        budget >> 20
    )
}

/// Watches this thread's memory while one file is converted; ends when dropped.
pub(crate) struct ConversionMemory {
    previous: Option<Watch>,
}

impl ConversionMemory {
    pub(crate) fn watch(file_bytes: usize) -> ConversionMemory {
        let budget = FLOOR + PER_BYTE * file_bytes as u64;
        let baseline = COUNTER.with(|counter| {
            let live = counter.live.get();
            counter.limit.set(live.saturating_add(budget as i64));
            counter.peak.set(live);
            live
        });
        let previous = WATCH.with(|w| {
            w.replace(Some(Watch {
                baseline,
                budget,
                tripped: false,
            }))
        });
        ConversionMemory { previous }
    }

    /// The most bytes held at once so far (zero where the allocator is not installed).
    pub(crate) fn peak(&self) -> u64 {
        let baseline = WATCH.with(Cell::get).map_or(0, |w| w.baseline);
        COUNTER.with(|counter| (counter.peak.get() - baseline).max(0) as u64)
    }

    /// Why the conversion is refused, once it passed its budget.
    pub(crate) fn refusal(&self) -> Option<String> {
        WATCH
            .with(Cell::get)
            .filter(|w| w.tripped)
            .map(|w| runaway_reason(w.budget))
    }
}

impl Drop for ConversionMemory {
    fn drop(&mut self) {
        // Watches do not nest in practice (one conversion per thread at a time); an outer one
        // gets its limit back, without the bytes counted meanwhile in its peak.
        let previous = self.previous.take();
        COUNTER.with(|counter| {
            let limit = previous
                .filter(|w| !w.tripped)
                .map_or(i64::MAX, |w| w.baseline.saturating_add(w.budget as i64));
            counter.limit.set(limit);
        });
        WATCH.with(|w| w.set(previous));
    }
}
