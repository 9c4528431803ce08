//! How an object's bytes are kept, in the store and in exports: a zstd
//! frame of them when that is smaller, else the bytes as they are. The
//! name stays the SHA-256 of the bytes themselves, so objects are
//! deduplicated by content whichever way they are kept. Reading accepts
//! both forms (stores and exports written before compression hold raw
//! bytes) and tells them apart by that name: a zstd frame that decodes
//! (within its cap) to bytes of that hash is them; otherwise the kept bytes
//! must hash to it themselves.

use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::io::Read as _;
use worldline_case::canon;

/// The store's level: fast (an 18 MB Python agent in ~0.15 s) for ~3×.
pub const STORE_LEVEL: i32 = 3;

/// An export's level: written once and carried away, so smaller (the same
/// agent in ~0.4 s, 13% smaller than at the store's level).
pub const EXPORT_LEVEL: i32 = 9;

/// The four bytes a zstd frame starts with.
const MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// The form to keep `bytes` in: a zstd frame at `level` when it is
/// smaller, else the bytes as they are.
pub fn encode(bytes: &[u8], level: i32) -> Cow<'_, [u8]> {
    match zstd::bulk::compress(bytes, level) {
        Ok(frame) if frame.len() < bytes.len() => Cow::Owned(frame),
        _ => Cow::Borrowed(bytes),
    }
}

/// Why kept bytes are not the object named `sha`.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Undecodable {
    #[error("does not match its hash")]
    Mismatch,
    #[error("decompresses past its cap of {}", worldline_case::bounded::size(*.0))]
    TooLarge(u64),
}

/// The object named `sha` from its kept form (at most `cap` bytes once
/// decompressed), checked against its hash. No more than the object's own
/// bytes are held while it is read: a frame of a few kilobytes that
/// decompresses to gigabytes (a "bomb" in an export) is refused having
/// held none of them.
pub fn decode(kept: Vec<u8>, sha: &str, cap: u64) -> Result<Vec<u8>, Undecodable> {
    let mut too_large = false;
    if kept.starts_with(&MAGIC) {
        match inflate(&kept, sha, cap) {
            Ok(Inflated::It(bytes)) => return Ok(bytes),
            Ok(Inflated::TooLarge) => too_large = true,
            Ok(Inflated::NotIt) | Err(_) => {}
        }
    }
    // Raw bytes (an older store or export, or an object that compression
    // did not make smaller; it may itself be a zstd file).
    if canon::sha256_hex(&kept) == sha {
        return Ok(kept);
    }
    Err(if too_large {
        Undecodable::TooLarge(cap)
    } else {
        Undecodable::Mismatch
    })
}

/// What the frames of kept bytes decompress to.
enum Inflated {
    /// The object named: bytes of its hash, within the cap.
    It(Vec<u8>),
    /// Past the cap.
    TooLarge,
    /// Bytes of another hash.
    NotIt,
}

/// The frames in `kept` decompressed, if they are the object named `sha`
/// within `cap` bytes.
fn inflate(kept: &[u8], sha: &str, cap: u64) -> std::io::Result<Inflated> {
    // A frame that says its size (the store's and exports' all do) is
    // decompressed at once into exactly that many bytes, unless the size
    // is past the cap. Bytes past it (a second frame), or a frame that
    // holds more than it says, fail that and are read as a stream.
    let checked = |bytes: Vec<u8>| match canon::sha256_hex(&bytes) == sha {
        true => Inflated::It(bytes),
        false => Inflated::NotIt,
    };
    match zstd::zstd_safe::get_frame_content_size(kept) {
        Ok(Some(size)) if size > cap => return Ok(Inflated::TooLarge),
        Ok(Some(size)) => {
            if let Ok(bytes) = zstd::bulk::decompress(kept, size as usize)
                && bytes.len() as u64 == size
            {
                return Ok(checked(bytes));
            }
        }
        _ => {}
    }
    // A stream of unknown length: first counted and hashed without being
    // held (growing a buffer to the cap would hold up to twice it), then,
    // when it is the object, decompressed into a buffer of its size.
    let mut hasher = Sha256::new();
    let len = std::io::copy(
        &mut zstd::stream::read::Decoder::new(kept)?.take(cap + 1),
        &mut hasher,
    )?;
    if len > cap {
        return Ok(Inflated::TooLarge);
    }
    if canon::hex_of(&hasher.finalize()) != sha {
        return Ok(Inflated::NotIt);
    }
    let mut bytes = Vec::with_capacity(len as usize);
    zstd::stream::read::Decoder::new(kept)?
        .take(len)
        .read_to_end(&mut bytes)?;
    // The same frames decompress to the same bytes: hashed once, above.
    Ok(match bytes.len() as u64 == len {
        true => Inflated::It(bytes),
        false => Inflated::NotIt,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressible_bytes_are_kept_as_a_frame_and_read_back() {
        let bytes = b"world row ".repeat(1000);
        let sha = canon::sha256_hex(&bytes);
        let kept = encode(&bytes, STORE_LEVEL).into_owned();
        assert!(kept.starts_with(&MAGIC) && kept.len() < bytes.len() / 10);
        assert_eq!(decode(kept, &sha, 1 << 20).unwrap(), bytes);
    }

    #[test]
    fn raw_bytes_are_still_read_and_small_ones_stay_raw() {
        let bytes = b"seed = 1\n".to_vec();
        let sha = canon::sha256_hex(&bytes);
        assert_eq!(encode(&bytes, STORE_LEVEL), Cow::Borrowed(&bytes[..]));
        assert_eq!(decode(bytes.clone(), &sha, 1 << 20).unwrap(), bytes);
        // A zstd file kept raw is its own bytes, not what it decodes to.
        let frame = zstd::bulk::compress(&b"inner".repeat(100), 3).unwrap();
        let frame_sha = canon::sha256_hex(&frame);
        assert_eq!(decode(frame.clone(), &frame_sha, 1 << 20).unwrap(), frame);
    }

    /// Two frames one after the other are both read (the first says its
    /// size; the bytes after it are not lost).
    #[test]
    fn a_second_frame_after_one_that_says_its_size_is_read_too() {
        let (a, b) = (b"first ".repeat(100), b"second ".repeat(100));
        let mut kept = zstd::bulk::compress(&a, STORE_LEVEL).unwrap();
        kept.extend(zstd::bulk::compress(&b, STORE_LEVEL).unwrap());
        let whole = [a, b].concat();
        let sha = canon::sha256_hex(&whole);
        assert_eq!(decode(kept, &sha, 1 << 20).unwrap(), whole);
    }

    #[test]
    fn wrong_bytes_and_bombs_are_refused() {
        let bytes = vec![0u8; 1 << 20];
        let sha = canon::sha256_hex(&bytes);
        let kept = encode(&bytes, STORE_LEVEL).into_owned();
        assert_eq!(
            decode(kept.clone(), &sha, 1000),
            Err(Undecodable::TooLarge(1000))
        );
        assert_eq!(
            decode(kept, &"0".repeat(64), 1 << 21),
            Err(Undecodable::Mismatch)
        );
        assert_eq!(
            decode(b"hello".to_vec(), &sha, 1 << 21),
            Err(Undecodable::Mismatch)
        );
    }
}
