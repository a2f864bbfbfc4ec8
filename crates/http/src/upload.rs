//! Receiving binary bodies: small ones in memory, large ones streamed to a file in the
//! uploads directory by a writer thread that hashes as it writes, so memory stays flat
//! whatever the size.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use arca_model::{DigestAlgorithm, DigestValue, MultiHasher};
use arca_repository::{BinaryData, Error, ReceivedBinary, Upload};
use axum::body::Body;
use bytes::{Bytes, BytesMut};

use crate::limits::{BodyBudget, Share};

/// Bodies up to this size are kept in memory.
const MEMORY_LIMIT: usize = 1 << 20;
/// Chunks in flight between the socket and the writer thread.
const CHANNEL_DEPTH: usize = 2;

/// The algorithms to compute while receiving a body: `content`, the digest of the OCFL
/// object it will land in, first; then those of the digests the client sent, to verify
/// them.
pub(crate) fn algorithms(
    content: DigestAlgorithm,
    expected: &[DigestValue],
) -> Vec<DigestAlgorithm> {
    let mut algorithms = vec![content];
    for d in expected {
        if !algorithms.contains(&d.algorithm) {
            algorithms.push(d.algorithm);
        }
    }
    algorithms
}

/// Reads a request body, computing its digests in `algorithms` on the way. While it is
/// held in memory it takes its share of `budget`; when the budget has no room, the body
/// goes to a file at once.
pub(crate) async fn receive(
    body: Body,
    uploads_dir: PathBuf,
    algorithms: Vec<DigestAlgorithm>,
    budget: &BodyBudget,
) -> Result<ReceivedBinary, Error> {
    let mut body = body.into_data_stream();
    let mut buf = BytesMut::new();
    let mut share = Share::default();
    use futures_util::StreamExt;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| Error::Body(e.to_string()))?;
        buf.extend_from_slice(&chunk);
        if buf.len() > MEMORY_LIMIT || !budget.cover(&mut share, buf.len(), Duration::ZERO).await {
            drop(share);
            return stream_to_file(buf.freeze(), body, uploads_dir, algorithms).await;
        }
    }
    Ok(ReceivedBinary::from_memory(buf.freeze(), &algorithms))
}

async fn stream_to_file(
    first: Bytes,
    mut rest: axum::body::BodyDataStream,
    uploads_dir: PathBuf,
    algorithms: Vec<DigestAlgorithm>,
) -> Result<ReceivedBinary, Error> {
    use futures_util::StreamExt;
    let upload = Upload::new_in(&uploads_dir);
    let path = upload.path().to_path_buf();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Bytes>(CHANNEL_DEPTH);
    let writer = tokio::task::spawn_blocking(move || -> std::io::Result<_> {
        let mut file = File::create(&path)?;
        let mut hasher = MultiHasher::new(&algorithms);
        while let Some(chunk) = rx.blocking_recv() {
            hasher.update(&chunk);
            file.write_all(&chunk)?;
        }
        // The journal record of the write will refer to this file instead of holding its
        // bytes, so the file and its name must be durable first.
        file.sync_all()?;
        if let Some(dir) = path.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok((hasher.len(), hasher.finish()))
    });
    // A failed send means the writer stopped (an I/O error), reported when it is joined.
    let mut ok = tx.send(first).await.is_ok();
    while ok {
        match rest.next().await {
            Some(Ok(chunk)) => ok = tx.send(chunk).await.is_ok(),
            Some(Err(e)) => {
                drop(tx);
                let _ = writer.await;
                return Err(Error::Body(e.to_string()));
            }
            None => break,
        }
    }
    drop(tx);
    let (size, digests) = writer
        .await
        .map_err(|e| Error::Io(std::io::Error::other(e)))??;
    Ok(ReceivedBinary {
        data: BinaryData::File(upload),
        size,
        digests,
    })
}
