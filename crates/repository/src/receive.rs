//! Receiving a binary's bytes from a client: small bodies in memory, large ones streamed to
//! a file in the uploads directory by a writer thread that hashes as it writes, so memory
//! stays flat whatever the size. The repository chooses what to compute (the digest of the
//! OCFL object the bytes will land in, and those the client sent to verify them) and where
//! the file goes; the caller only hands over the stream.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use arca_model::{DigestAlgorithm, DigestValue, FedoraId, MultiHasher};
use bytes::{Bytes, BytesMut};
use futures_util::{Stream, StreamExt};

use crate::{BinaryData, Error, ReceivedBinary, Repository, Result, Upload};

/// Bodies up to this size may be kept in memory.
const MEMORY_LIMIT: usize = 1 << 20;
/// Chunks in flight between the stream and the writer thread.
const CHANNEL_DEPTH: usize = 2;

impl Repository {
    /// Receives the new content of binary `id` from `body`, computing on the way the digest
    /// of the OCFL object it will land in and those of `expected` (which the write then
    /// verifies). The body stays in memory while it is small and `may_hold(bytes)` allows
    /// it (a server-wide memory budget); otherwise it goes to a durable file under the
    /// uploads directory at once. A failing stream is [`Error::Body`].
    pub async fn receive_binary<S, E>(
        &self,
        id: &FedoraId,
        body: S,
        expected: &[DigestValue],
        may_hold: impl FnMut(usize) -> bool + Send,
    ) -> Result<ReceivedBinary>
    where
        S: Stream<Item = std::result::Result<Bytes, E>> + Unpin + Send,
        E: std::fmt::Display,
    {
        let mut algorithms = vec![self.content_digest_for(id).await?];
        for d in expected {
            if !algorithms.contains(&d.algorithm) {
                algorithms.push(d.algorithm);
            }
        }
        receive(body, &self.uploads_dir(), algorithms, may_hold).await
    }

    /// Receives a request body that is no binary's content (a document to import), as
    /// [`receive_binary`](Self::receive_binary) does but without digests.
    pub async fn receive_document<S, E>(
        &self,
        body: S,
        may_hold: impl FnMut(usize) -> bool + Send,
    ) -> Result<ReceivedBinary>
    where
        S: Stream<Item = std::result::Result<Bytes, E>> + Unpin + Send,
        E: std::fmt::Display,
    {
        receive(body, &self.uploads_dir(), Vec::new(), may_hold).await
    }
}

async fn receive<S, E>(
    mut body: S,
    uploads_dir: &Path,
    algorithms: Vec<DigestAlgorithm>,
    mut may_hold: impl FnMut(usize) -> bool + Send,
) -> Result<ReceivedBinary>
where
    S: Stream<Item = std::result::Result<Bytes, E>> + Unpin + Send,
    E: std::fmt::Display,
{
    let mut buf = BytesMut::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| Error::Body(e.to_string()))?;
        buf.extend_from_slice(&chunk);
        if buf.len() > MEMORY_LIMIT || !may_hold(buf.len()) {
            // What the body held of the memory budget goes back before it streams on.
            drop(may_hold);
            return stream_to_file(buf.freeze(), body, uploads_dir, algorithms).await;
        }
    }
    Ok(ReceivedBinary::from_memory(buf.freeze(), &algorithms))
}

async fn stream_to_file<S, E>(
    first: Bytes,
    mut rest: S,
    uploads_dir: &Path,
    algorithms: Vec<DigestAlgorithm>,
) -> Result<ReceivedBinary>
where
    S: Stream<Item = std::result::Result<Bytes, E>> + Unpin + Send,
    E: std::fmt::Display,
{
    let upload = Upload::new_in(uploads_dir);
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
            File::open(dir)?.sync_all()?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(parts: &[&'static [u8]]) -> impl Stream<Item = std::result::Result<Bytes, String>> {
        futures_util::stream::iter(
            parts
                .iter()
                .map(|p| Ok(Bytes::from_static(p)))
                .collect::<Vec<_>>(),
        )
    }

    fn sha256(bytes: &[u8]) -> DigestValue {
        let mut h = MultiHasher::new(&[DigestAlgorithm::Sha256]);
        h.update(bytes);
        h.finish().remove(0)
    }

    #[tokio::test]
    async fn a_small_body_stays_in_memory_with_every_digest_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let algorithms = vec![DigestAlgorithm::Sha512, DigestAlgorithm::Sha256];
        let got = receive(chunks(&[b"ab", b"c"]), dir.path(), algorithms, |_| true)
            .await
            .unwrap();
        assert!(matches!(got.data, BinaryData::Memory(ref b) if &b[..] == b"abc"));
        assert_eq!(got.size, 3);
        assert_eq!(got.digest(DigestAlgorithm::Sha256), Some(&sha256(b"abc")));
        assert!(got.digest(DigestAlgorithm::Sha512).is_some());
    }

    #[tokio::test]
    async fn a_body_the_memory_gate_refuses_goes_to_a_durable_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut asked = Vec::new();
        let got = receive(
            chunks(&[b"first", b"second"]),
            dir.path(),
            vec![DigestAlgorithm::Sha256],
            |n| {
                asked.push(n);
                false
            },
        )
        .await
        .unwrap();
        assert_eq!(asked, [5], "the gate is asked once, then the body streams");
        let BinaryData::File(upload) = &got.data else {
            panic!("kept in memory")
        };
        assert_eq!(std::fs::read(upload.path()).unwrap(), b"firstsecond");
        assert_eq!(
            got.digest(DigestAlgorithm::Sha256),
            Some(&sha256(b"firstsecond"))
        );
    }

    #[tokio::test]
    async fn a_cut_body_is_a_body_error_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let body = futures_util::stream::iter(vec![
            Ok(Bytes::from_static(b"part")),
            Err("connection reset".to_string()),
        ]);
        let e = receive(body, dir.path(), vec![DigestAlgorithm::Sha256], |_| false)
            .await
            .unwrap_err();
        assert!(
            matches!(e, Error::Body(ref m) if m == "connection reset"),
            "{e:?}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
