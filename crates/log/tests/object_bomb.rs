//! An object's kept form read within its own size: a zstd frame of a few
//! kilobytes that decompresses far past the cap (a "bomb" in an export, or
//! in a store's object file) is refused having held almost none of it, and
//! an object read from a stream of unknown length is held once, not in a
//! buffer grown by doubling. The heap's peak is read from a counting
//! allocator, which is why this is a test binary of its own.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use worldline_case::canon;
use worldline_log::object_codec::{Undecodable, decode};

struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = NOW.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
        PEAK.fetch_max(now, Ordering::SeqCst);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        NOW.fetch_sub(layout.size(), Ordering::SeqCst);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// The tests read one peak each, one at a time.
static ONE: Mutex<()> = Mutex::new(());

const MIB: usize = 1 << 20;

/// `len` zero bytes as one zstd frame that does not say its size (what
/// `zstd` writes from a pipe), made a megabyte at a time.
fn unsized_frame(len: usize) -> Vec<u8> {
    let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    let chunk = vec![0u8; MIB];
    for _ in 0..len / MIB {
        encoder.write_all(&chunk).unwrap();
    }
    let frame = encoder.finish().unwrap();
    assert!(
        matches!(zstd::zstd_safe::get_frame_content_size(&frame), Ok(None)),
        "the frame does not say its size"
    );
    frame
}

/// The heap's peak above what was held before, while `f` runs.
fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = NOW.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let out = f();
    (out, PEAK.load(Ordering::SeqCst) - base)
}

#[test]
fn a_bomb_is_refused_holding_almost_none_of_it() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let cap = 16 * MIB as u64;
    let bomb = unsized_frame(96 * MIB);
    let (result, peak) = peak_during(|| decode(bomb, &"0".repeat(64), cap));
    assert_eq!(result, Err(Undecodable::TooLarge(cap)));
    // Growing a buffer to the cap held up to twice it (32 MiB here, 1 GiB
    // at the store's cap of 512 MiB).
    assert!(peak < 4 * MIB, "held {peak} bytes refusing the bomb");
}

#[test]
fn a_frame_that_says_a_size_past_the_cap_is_refused_at_once() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let bytes = vec![7u8; 8 * MIB];
    let frame = zstd::bulk::compress(&bytes, 3).unwrap();
    let sha = canon::sha256_hex(&bytes);
    drop(bytes);
    let (result, peak) = peak_during(|| decode(frame, &sha, MIB as u64));
    assert_eq!(result, Err(Undecodable::TooLarge(MIB as u64)));
    assert!(peak < MIB, "held {peak} bytes refusing the frame");
}

#[test]
fn an_object_of_unknown_length_is_held_once() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let len = 24 * MIB;
    let frame = unsized_frame(len);
    let sha = canon::sha256_hex(vec![0u8; len]);
    let (result, peak) = peak_during(|| decode(frame, &sha, 512 * MIB as u64));
    assert_eq!(result.map(|b| b.len()), Ok(len));
    // Doubling from 16 MiB held 32 MiB, and both while it copied.
    assert!(peak < len + 4 * MIB, "held {peak} bytes for {len}");
}
