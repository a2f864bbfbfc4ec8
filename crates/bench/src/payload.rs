//! Generated payloads: any size, streamed, never held whole in memory, never two alike.
//!
//! One pseudo-random block of [`BLOCK`] bytes is made once per run. An object's content is that
//! block repeated, with the first [`STAMP`] bytes of every block replaced by a stamp made of the
//! object number (mixed with a per-run nonce) and the block index. Every chunk but the stamps is
//! a zero-copy slice of the shared block, so a 700 MB upload costs almost no CPU and no memory,
//! and no two objects (nor two runs) have the same digest, so a deduplicating server gains
//! nothing.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

/// Size of the repeated pseudo-random block (1 MiB).
pub const BLOCK: usize = 1 << 20;
/// Size of the per-block stamp (object number and block index, little-endian u64 each).
pub const STAMP: usize = 16;

/// The payload generator of one run.
#[derive(Clone, Debug)]
pub struct Payload {
    block: Bytes,
    nonce: u64,
}

impl Payload {
    /// Makes the block from `seed`; `nonce` is mixed into every stamp so that two runs with
    /// the same seed still produce different objects.
    pub fn new(seed: u64, nonce: u64) -> Self {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut block = vec![0u8; BLOCK];
        rng.fill_bytes(&mut block);
        Payload {
            block: Bytes::from(block),
            nonce,
        }
    }

    /// The chunks of object number `object`, `len` bytes in all.
    pub fn chunks(&self, object: u64, len: u64) -> Chunks {
        Chunks {
            block: self.block.clone(),
            object: object ^ self.nonce,
            pos: 0,
            len,
        }
    }

    /// A request body streaming object number `object` of `len` bytes.
    pub fn body(&self, object: u64, len: u64) -> PayloadBody {
        PayloadBody {
            chunks: Some(self.chunks(object, len)),
            fixed: None,
        }
    }
}

/// Iterator over the chunks of one generated object (see the module documentation).
#[derive(Clone, Debug)]
pub struct Chunks {
    block: Bytes,
    object: u64,
    pos: u64,
    len: u64,
}

impl Chunks {
    /// Bytes not yet produced.
    pub fn remaining(&self) -> u64 {
        self.len - self.pos
    }
}

impl Iterator for Chunks {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        let remaining = self.remaining();
        if remaining == 0 {
            return None;
        }
        let block = BLOCK as u64;
        let index = self.pos / block;
        let off = (self.pos % block) as usize;
        let chunk = if off < STAMP {
            let mut stamp = [0u8; STAMP];
            stamp[..8].copy_from_slice(&self.object.to_le_bytes());
            stamp[8..].copy_from_slice(&index.to_le_bytes());
            let end = STAMP.min(off + remaining.min(STAMP as u64) as usize);
            Bytes::copy_from_slice(&stamp[off..end])
        } else {
            let end = (off as u64 + remaining).min(block) as usize;
            self.block.slice(off..end)
        };
        self.pos += chunk.len() as u64;
        Some(chunk)
    }
}

/// A request body: empty, or a generated object streamed chunk by chunk with an exact length
/// (so the request carries `Content-Length`, as a file upload would).
#[derive(Debug, Default)]
pub struct PayloadBody {
    chunks: Option<Chunks>,
    /// A small fixed body (RDF), sent as one frame.
    fixed: Option<Bytes>,
}

impl PayloadBody {
    /// An empty body.
    pub fn empty() -> Self {
        PayloadBody::default()
    }

    /// A small fixed body, such as a Turtle document.
    pub fn fixed(bytes: impl Into<Bytes>) -> Self {
        PayloadBody {
            chunks: None,
            fixed: Some(bytes.into()),
        }
    }
}

impl Body for PayloadBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if let Some(b) = this.fixed.take() {
            return Poll::Ready(Some(Ok(Frame::data(b))));
        }
        Poll::Ready(
            this.chunks
                .as_mut()
                .and_then(Iterator::next)
                .map(|b| Ok(Frame::data(b))),
        )
    }

    fn is_end_stream(&self) -> bool {
        self.fixed.is_none() && self.chunks.as_ref().is_none_or(|c| c.remaining() == 0)
    }

    fn size_hint(&self) -> SizeHint {
        let fixed = self.fixed.as_ref().map_or(0, |b| b.len() as u64);
        SizeHint::with_exact(fixed + self.chunks.as_ref().map_or(0, Chunks::remaining))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(p: &Payload, object: u64, len: u64) -> Vec<u8> {
        let mut v = Vec::new();
        for c in p.chunks(object, len) {
            assert!(!c.is_empty());
            v.extend_from_slice(&c);
        }
        v
    }

    #[test]
    fn lengths_are_exact() {
        let p = Payload::new(1, 2);
        for len in [
            0,
            1,
            15,
            16,
            17,
            1024,
            20 * 1024,
            BLOCK as u64 - 1,
            BLOCK as u64,
            BLOCK as u64 + 5,
            3 * BLOCK as u64 + 17,
        ] {
            assert_eq!(collect(&p, 7, len).len() as u64, len, "len {len}");
        }
    }

    #[test]
    fn objects_differ_and_are_deterministic() {
        let p = Payload::new(1, 2);
        let a = collect(&p, 1, 2 * BLOCK as u64 + 100);
        let b = collect(&p, 2, 2 * BLOCK as u64 + 100);
        assert_ne!(a, b);
        assert_eq!(a, collect(&p, 1, 2 * BLOCK as u64 + 100));
        // every block of one object differs from every other block of the same object
        assert_ne!(a[..BLOCK], a[BLOCK..2 * BLOCK]);
        // a different nonce gives different objects for the same numbers
        let q = Payload::new(1, 3);
        assert_ne!(a, collect(&q, 1, 2 * BLOCK as u64 + 100));
    }

    #[test]
    fn large_objects_stream_in_block_sized_chunks() {
        let p = Payload::new(0, 0);
        let len = 700 * BLOCK as u64;
        let mut n = 0u64;
        let mut max = 0;
        for c in p.chunks(3, len) {
            n += c.len() as u64;
            max = max.max(c.len());
        }
        assert_eq!(n, len);
        assert!(max <= BLOCK);
    }

    #[test]
    fn body_reports_exact_size() {
        let p = Payload::new(0, 0);
        let b = p.body(1, 12345);
        assert_eq!(b.size_hint().exact(), Some(12345));
        assert!(!b.is_end_stream());
        let e = PayloadBody::empty();
        assert_eq!(e.size_hint().exact(), Some(0));
        assert!(e.is_end_stream());
    }
}
