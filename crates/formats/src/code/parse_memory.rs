//! tree-sitter's memory, counted per thread, so that a parse which runs away with it is named
//! and stopped.
//!
//! Error recovery on some malformed input (TypeScript's `f<a, ` repeated) leaves tree-sitter
//! with a stack whose final step, accepting the tree after the text is read, takes memory
//! quadratic in the file: 40 KB took 1.4 GB, 400 KB more than the machine had. No callback runs
//! in that step, so the allocator is the one place that sees it: tree-sitter's allocations go
//! through [`install`]'s functions, which count the bytes each thread holds. Past a parse's
//! budget the host's hook ([`on_runaway_parse`]) is called once, on the parsing thread, inside
//! the allocation. The hook cannot unwind (it is called from C); it may end or replace the
//! process (the CLI sets the file aside and starts again), or return, in which case the parse
//! goes on and its result is refused.

// An allocator for C code is raw pointers and layouts: this module is the crate's one use.
#![allow(unsafe_code)]

use std::alloc::{Layout, alloc, alloc_zeroed, dealloc, handle_alloc_error, realloc};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::{Once, OnceLock};

/// Bytes before each block: its size, kept so `free` and `realloc` can count it. Sixteen keeps
/// the block aligned as `malloc`'s are.
const HEADER: usize = 16;
const ALIGN: usize = 16;

/// What a parse that passed its memory budget tells the hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunawayParse {
    /// Bytes tree-sitter held for this parse when the budget was passed.
    pub used: u64,
    /// The parse's budget in bytes.
    pub budget: u64,
}

/// Called when a parse passes its budget. Set once per process; see the module docs.
pub type RunawayParseHook = fn(&RunawayParse);

static HOOK: OnceLock<RunawayParseHook> = OnceLock::new();

/// Sets the process's hook for a runaway parse. Only the first call sets it (a process has one
/// policy); returns whether this call did.
pub fn on_runaway_parse(hook: RunawayParseHook) -> bool {
    HOOK.set(hook).is_ok()
}

#[derive(Debug, Clone, Copy)]
struct Watch {
    /// The thread's live bytes when the parse started.
    baseline: i64,
    budget: u64,
    peak: u64,
    tripped: bool,
}

thread_local! {
    /// Bytes tree-sitter holds that this thread allocated, less those it freed. Signed: a
    /// block freed on another thread than the one that allocated it moves both counts.
    static LIVE: Cell<i64> = const { Cell::new(0) };
    static WATCH: Cell<Option<Watch>> = const { Cell::new(None) };
}

/// Routes tree-sitter's allocations through the counting functions. Called before any parser
/// is made: tree-sitter requires its allocator to be set before any object of its exists.
pub(crate) fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: the four functions form one family (each block carries its own layout), never
        // return null (allocation failure aborts, as tree-sitter's defaults do), align as
        // malloc does; this runs once, before this process makes any tree-sitter object (every
        // parser is made by this crate, after this call).
        unsafe {
            tree_sitter::set_allocator(Some(tree_sitter::Allocator {
                malloc: counted_malloc,
                calloc: counted_calloc,
                realloc: counted_realloc,
                free: counted_free,
            }))
        }
    });
}

/// Counts tree-sitter's memory on this thread until [`ParseMemory::finish`].
pub(crate) struct ParseMemory {
    _not_send: std::marker::PhantomData<*const ()>,
}

/// What a watched parse used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ParseMemoryUse {
    /// Most bytes held at once.
    pub peak: u64,
    /// Whether the budget was passed.
    pub tripped: bool,
}

impl ParseMemory {
    pub(crate) fn watch(budget: u64) -> ParseMemory {
        install();
        let baseline = LIVE.with(Cell::get);
        WATCH.with(|w| {
            w.set(Some(Watch {
                baseline,
                budget,
                peak: 0,
                tripped: false,
            }))
        });
        ParseMemory {
            _not_send: std::marker::PhantomData,
        }
    }

    /// Whether the budget has been passed so far.
    pub(crate) fn tripped(&self) -> bool {
        WATCH.with(|w| w.get().is_some_and(|w| w.tripped))
    }

    pub(crate) fn finish(self) -> ParseMemoryUse {
        let watch = WATCH.with(|w| w.take());
        std::mem::forget(self);
        watch.map_or(
            ParseMemoryUse {
                peak: 0,
                tripped: false,
            },
            |w| ParseMemoryUse {
                peak: w.peak,
                tripped: w.tripped,
            },
        )
    }
}

impl Drop for ParseMemory {
    fn drop(&mut self) {
        // An early return (an error, a panic) ends the watch too.
        WATCH.with(|w| w.set(None));
    }
}

/// Adds `delta` to this thread's count and checks the watch. Never allocates through
/// tree-sitter, so the hook may allocate freely.
fn count(delta: i64) {
    let Ok(live) = LIVE.try_with(|live| {
        live.set(live.get() + delta);
        live.get()
    }) else {
        return;
    };
    if delta <= 0 {
        return;
    }
    let Ok(Some(mut watch)) = WATCH.try_with(Cell::get) else {
        return;
    };
    let used = (live - watch.baseline).max(0) as u64;
    watch.peak = watch.peak.max(used);
    let trips = !watch.tripped && used > watch.budget;
    watch.tripped |= trips;
    let _ = WATCH.try_with(|w| w.set(Some(watch)));
    if trips && let Some(hook) = HOOK.get() {
        hook(&RunawayParse {
            used,
            budget: watch.budget,
        });
    }
}

fn layout(size: usize) -> Layout {
    match size
        .checked_add(HEADER)
        .and_then(|total| Layout::from_size_align(total, ALIGN).ok())
    {
        Some(layout) => layout,
        // A size no allocator can meet: fail as an allocation failure does.
        None => handle_alloc_error(Layout::new::<[u8; HEADER]>()),
    }
}

/// Writes the size into the header and returns the block's user part.
///
/// # Safety
/// `base` is a live block of `layout(size)`, or null.
unsafe fn finish_block(base: *mut u8, size: usize) -> *mut c_void {
    if base.is_null() {
        handle_alloc_error(layout(size));
    }
    // SAFETY: the block starts with HEADER bytes aligned to 16, room for a usize.
    unsafe {
        base.cast::<usize>().write(size);
        base.add(HEADER).cast()
    }
}

/// The block's start and recorded size, from a pointer this family returned.
///
/// # Safety
/// `ptr` was returned by one of these functions and not freed.
unsafe fn block_of(ptr: *mut c_void) -> (*mut u8, usize) {
    // SAFETY: the caller's pointer is HEADER bytes into a block that starts with its size.
    unsafe {
        let base = ptr.cast::<u8>().sub(HEADER);
        (base, base.cast::<usize>().read())
    }
}

unsafe extern "C" fn counted_malloc(size: usize) -> *mut c_void {
    // SAFETY: the layout is never zero-sized (it includes the header).
    let block = unsafe { finish_block(alloc(layout(size)), size) };
    count(size as i64);
    block
}

unsafe extern "C" fn counted_calloc(count_of: usize, size: usize) -> *mut c_void {
    let Some(total) = count_of.checked_mul(size) else {
        handle_alloc_error(Layout::new::<[u8; HEADER]>());
    };
    // SAFETY: as in counted_malloc.
    let block = unsafe { finish_block(alloc_zeroed(layout(total)), total) };
    count(total as i64);
    block
}

unsafe extern "C" fn counted_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    if ptr.is_null() {
        // SAFETY: realloc of null is malloc.
        return unsafe { counted_malloc(size) };
    }
    // SAFETY: tree-sitter passes back a pointer from this family; the old layout is rebuilt
    // from the recorded size.
    unsafe {
        let (base, old) = block_of(ptr);
        let grown = realloc(base, layout(old), layout(size).size());
        let block = finish_block(grown, size);
        count(size as i64 - old as i64);
        block
    }
}

unsafe extern "C" fn counted_free(ptr: *mut c_void) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: as in counted_realloc.
    unsafe {
        let (base, size) = block_of(ptr);
        dealloc(base, layout(size));
        count(-(size as i64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_what_a_watched_parse_holds_and_trips_past_its_budget() {
        install();
        let watch = ParseMemory::watch(1 << 20);
        // SAFETY: blocks from this family, freed by it.
        unsafe {
            let small = counted_malloc(1000);
            let grown = counted_realloc(small, 4000);
            let zeroed = counted_calloc(10, 100).cast::<u8>();
            assert!((0..1000).all(|i| *zeroed.add(i) == 0));
            counted_free(grown);
            counted_free(zeroed.cast());
        }
        let calm = watch.finish();
        assert_eq!(calm.peak, 5000);
        assert!(!calm.tripped);

        let watch = ParseMemory::watch(1 << 20);
        // SAFETY: as above.
        unsafe {
            let big = counted_malloc(2 << 20);
            counted_free(big);
        }
        let over = watch.finish();
        assert!(over.tripped);
        assert_eq!(over.peak, 2 << 20);
    }
}
