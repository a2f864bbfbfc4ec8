//! External content (Fedora API §3.9): binaries whose bytes live at a URL.
//!
//! - `copy`: the bytes are fetched once and stored like an upload; nothing of the URL is kept.
//! - `redirect` and `proxy`: only the URL is kept, in the resource header's `externalUrl` and
//!   `externalHandling` fields, as Fedora 6 stores them: no content file in the OCFL object,
//!   no `contentPath`, `digests: []`, the remote size in `contentSize`.
//!
//! Which URLs may be used is decided by an [`AllowList`], Fedora's format: a file with one
//! allowed URL prefix per line.

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use arca_ocfl::Change;

use crate::{Constraint, Error, ObjectPlan, ResourcePlan, Result};

/// How a binary's external content is handled (the `handling` attribute of the link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExternalHandling {
    /// Fetch the bytes and store them as if they were the request body.
    Copy,
    /// Keep the URL; reads answer with a redirect to it.
    Redirect,
    /// Keep the URL; reads stream its bytes through the server.
    Proxy,
}

impl ExternalHandling {
    /// The `handling` value (and `externalHandling` header field) for this mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Copy => "copy",
            Self::Redirect => "redirect",
            Self::Proxy => "proxy",
        }
    }

    /// Parses a `handling` value (case-insensitive, as Fedora).
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "copy" => Some(Self::Copy),
            "redirect" => Some(Self::Redirect),
            "proxy" => Some(Self::Proxy),
            _ => None,
        }
    }
}

/// A binary kept as a URL (redirect or proxy): what the kernel stores instead of bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalLocation {
    /// The URL as stored (`file:/abs/path` for files, as Fedora writes them).
    pub url: String,
    /// `Redirect` or `Proxy`.
    pub handling: ExternalHandling,
}

/// A URL that passed the allow-list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckedUrl {
    /// A local file: its URL in Fedora's stored form (`file:/abs/path`) and its real path
    /// (symbolic links resolved), which is under an allowed prefix.
    File {
        /// `file:/abs/path`.
        url: String,
        /// The canonical path of the file.
        path: PathBuf,
    },
    /// An `http:` or `https:` URL.
    Http(String),
}

impl CheckedUrl {
    /// The URL as stored.
    pub fn url(&self) -> &str {
        match self {
            Self::File { url, .. } => url,
            Self::Http(u) => u,
        }
    }
}

/// Fedora's allow-list of external content locations: a file with one URL prefix per line
/// (`file:///data/incoming/`, `http://example.org/files/`). A URL is allowed when it starts
/// with one of the prefixes (scheme and host compared case-insensitively, as Fedora does;
/// `file:`, `file://` and `file:///` are the same). Blank lines and lines starting with `#`
/// are skipped; lines that are not `http:`, `https:` or `file:` URLs, or that contain a `..`
/// segment, are ignored with a warning, as Fedora does.
///
/// `file:` URLs are checked twice: the URL as written (no `..` segments) and the file's real
/// path after resolving symbolic links, which must lie under the real path of an allowed
/// `file:` prefix, so that a link cannot lead outside the allowed directories.
///
/// The file is read again when its modification time changes (Fedora watches it too).
#[derive(Debug)]
pub struct AllowList {
    path: PathBuf,
    state: Mutex<Loaded>,
}

#[derive(Debug, Default)]
struct Loaded {
    modified: Option<SystemTime>,
    prefixes: Arc<Vec<String>>,
}

impl AllowList {
    /// Loads the list at `path`; an unreadable file is an error.
    pub fn load(path: &Path) -> std::io::Result<Self> {
        let list = Self {
            path: path.to_path_buf(),
            state: Mutex::new(Loaded::default()),
        };
        list.reload()?;
        Ok(list)
    }

    /// The file the list is read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The prefixes in force (normalized: lower-case scheme, `file:/…` form).
    pub fn prefixes(&self) -> Arc<Vec<String>> {
        self.refresh();
        self.state.lock().expect("allow-list lock").prefixes.clone()
    }

    fn reload(&self) -> std::io::Result<()> {
        let modified = std::fs::metadata(&self.path)?.modified().ok();
        let text = std::fs::read_to_string(&self.path)?;
        let mut prefixes = Vec::new();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let p = normalize_prefix(line);
            let scheme_ok = ["http://", "https://", "file:/"]
                .iter()
                .any(|s| p.starts_with(s));
            if !scheme_ok || has_dot_dot(&p) {
                tracing::warn!(line, file = %self.path.display(), "ignoring an invalid external content prefix");
                continue;
            }
            prefixes.push(p);
        }
        *self.state.lock().expect("allow-list lock") = Loaded {
            modified,
            prefixes: Arc::new(prefixes),
        };
        Ok(())
    }

    /// Re-reads the file when it changed; keeps the old list if it cannot be read.
    fn refresh(&self) {
        let now = std::fs::metadata(&self.path)
            .ok()
            .and_then(|m| m.modified().ok());
        if now != self.state.lock().expect("allow-list lock").modified {
            if let Err(e) = self.reload() {
                tracing::error!(error = %e, file = %self.path.display(), "cannot re-read the external content allow-list; keeping the previous one");
            }
        }
    }

    /// Checks `url` against the list. Errors are [`Error::Constraint`] with
    /// [`Constraint::ExternalContent`] and say why.
    pub fn check(&self, url: &str) -> Result<CheckedUrl> {
        let prefixes = self.prefixes();
        if prefixes.is_empty() {
            return Err(refused(
                "external content is disallowed by the server: its allow-list has no entries",
            ));
        }
        let lower = url.to_ascii_lowercase();
        if lower.starts_with("file:") {
            return check_file(url, &prefixes);
        }
        let Some(scheme) = ["http://", "https://"]
            .into_iter()
            .find(|s| lower.starts_with(s))
        else {
            return Err(refused(format!(
                "{url} is not an http:, https: or file: URL; external content must be one"
            )));
        };
        let after = &url[scheme.len()..];
        let (authority, path) = after.split_at(after.find(['/', '?', '#']).unwrap_or(after.len()));
        if authority.is_empty() || authority.contains(|c: char| c.is_whitespace() || c == '@') {
            return Err(refused(format!("{url} has no valid host")));
        }
        if has_dot_dot(path.split(['?', '#']).next().unwrap_or("")) {
            return Err(refused(format!(
                "{url} has a '..' segment; external content URLs must be absolute"
            )));
        }
        if !under(&prefixes, url) {
            return Err(refused(format!(
                "{url} is not under any allowed external content location"
            )));
        }
        Ok(CheckedUrl::Http(url.to_string()))
    }

    /// Checks a stored `file:` URL again before its bytes are read (the list or the file
    /// system may have changed since it was stored); the file's real path.
    pub fn recheck_file(&self, url: &str) -> Result<PathBuf> {
        match self.check(url)? {
            CheckedUrl::File { path, .. } => Ok(path),
            CheckedUrl::Http(_) => Err(refused(format!("{url} is not a file: URL"))),
        }
    }
}

fn refused(message: impl Into<String>) -> Error {
    Error::constraint(Constraint::ExternalContent, message)
}

/// `file://`, `file:///` → `file:/` (Fedora's normalization of prefixes); the scheme in
/// lower case, the rest as written.
fn normalize_prefix(line: &str) -> String {
    let Some(colon) = line.find(':') else {
        return line.to_string();
    };
    let scheme = line[..colon].to_ascii_lowercase();
    let rest = &line[colon + 1..];
    if scheme == "file" {
        format!("file:/{}", rest.trim_start_matches('/'))
    } else {
        format!("{scheme}:{rest}")
    }
}

/// Whether `url` starts with one of `prefixes`, ignoring case as Fedora does.
fn under(prefixes: &[String], url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    prefixes
        .iter()
        .any(|p| lower.starts_with(&p.to_ascii_lowercase()))
}

fn has_dot_dot(path: &str) -> bool {
    path.split(['/', '\\']).any(|s| s == "..")
}

/// The absolute path a `file:` URL names: `file:/p`, `file:///p` or `file://localhost/p`,
/// percent-decoded.
fn file_url_path(url: &str) -> Result<PathBuf> {
    let rest = &url["file:".len()..];
    let path = if let Some(after) = rest.strip_prefix("//") {
        // An authority: empty or localhost.
        let (host, p) = after.split_at(after.find('/').unwrap_or(after.len()));
        if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
            return Err(refused(format!(
                "{url} names host {host:?}; file: URLs must name a local file"
            )));
        }
        p
    } else {
        rest
    };
    if !path.starts_with('/') {
        return Err(refused(format!(
            "{url} is not absolute; file: URLs must name an absolute path"
        )));
    }
    let decoded = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .map_err(|_| refused(format!("{url} is not valid UTF-8 once percent-decoded")))?;
    if has_dot_dot(&decoded) {
        return Err(refused(format!(
            "{url} has a '..' segment; external content paths must be absolute"
        )));
    }
    let p = PathBuf::from(decoded.as_ref());
    if p.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(refused(format!("{url} leaves its directory")));
    }
    Ok(p)
}

fn check_file(url: &str, prefixes: &[String]) -> Result<CheckedUrl> {
    let path = file_url_path(url)?;
    let stored = format!(
        "file:{}",
        percent_encoding::utf8_percent_encode(&path.to_string_lossy(), PATH_SET)
    );
    if !under(prefixes, &stored) {
        return Err(refused(format!(
            "{url} is not under any allowed external content location"
        )));
    }
    let real = std::fs::canonicalize(&path).map_err(|e| {
        refused(format!(
            "the external file {url} cannot be used: {}",
            match e.kind() {
                std::io::ErrorKind::NotFound => "it does not exist".to_string(),
                _ => e.to_string(),
            }
        ))
    })?;
    if !real.is_file() {
        return Err(refused(format!("{url} is not a regular file")));
    }
    // The real path must be under the real path of an allowed file: prefix.
    let inside = prefixes
        .iter()
        .filter_map(|p| p.strip_prefix("file:"))
        .any(|p| real_prefix_matches(p, &real));
    if !inside {
        return Err(refused(format!(
            "{url} resolves to a file outside the allowed external content locations"
        )));
    }
    Ok(CheckedUrl::File {
        url: stored,
        path: real,
    })
}

/// Whether `real` (a canonical path) lies under prefix `p` (a percent-encoded path prefix
/// from the allow-list) once the prefix's own symbolic links are resolved. Compared with
/// case, as the file system does.
fn real_prefix_matches(p: &str, real: &Path) -> bool {
    let decoded = percent_encoding::percent_decode_str(p).decode_utf8_lossy();
    let (dir, tail) = match decoded.rfind('/') {
        Some(i) => (&decoded[..=i], &decoded[i + 1..]),
        None => return false,
    };
    let Ok(dir_real) = std::fs::canonicalize(dir) else {
        return false;
    };
    let mut want = dir_real.to_string_lossy().into_owned();
    if !want.ends_with('/') {
        want.push('/');
    }
    want.push_str(tail);
    real.to_string_lossy().starts_with(&want)
}

/// Characters of a path kept as they are in a stored `file:` URL.
const PATH_SET: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}');

impl ObjectPlan {
    /// A binary kept as a URL: the header gets `externalUrl`/`externalHandling`, empty
    /// digests and no content path, and a content file of an earlier version leaves the
    /// state (Fedora 6 leaves it there; arca drops bytes the resource no longer has).
    pub(crate) fn add_external(
        &mut self,
        mut headers: arca_model::ResourceHeaders,
        parent: Option<arca_model::FedoraId>,
        location: ExternalLocation,
    ) {
        headers.external_url = Some(location.url);
        headers.external_handling = Some(location.handling.as_str().to_string());
        headers.digests = Some(Vec::new());
        if let Some(old) = headers.content_path.take() {
            let in_state = self
                .current
                .as_ref()
                .is_some_and(|c| c.inventory.resolve_head(&old).is_some());
            if in_state {
                self.changes.push(Change {
                    logical_path: old,
                    content: None,
                });
            }
        }
        self.put(&self.header_path(&headers), headers.to_json());
        self.resources.push(ResourcePlan {
            headers,
            parent,
            content_logical: None,
            rdf: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(dir: &Path, lines: &str) -> AllowList {
        let f = dir.join("allowed.txt");
        std::fs::write(&f, lines).unwrap();
        AllowList::load(&f).unwrap()
    }

    #[test]
    fn http_prefixes_match_case_insensitively() {
        let d = tempfile::tempdir().unwrap();
        let l = list(
            d.path(),
            "http://Example.org/files/\n# comment\n\nftp://x/\n",
        );
        assert_eq!(l.prefixes().len(), 1);
        assert!(l.check("http://example.org/files/a.bin").is_ok());
        assert!(l.check("HTTP://EXAMPLE.ORG/files/a.bin").is_ok());
        assert!(l.check("http://example.org/other/a.bin").is_err());
        assert!(l.check("http://example.org/files/../other").is_err());
        assert!(l.check("https://example.org/files/a.bin").is_err());
        let l = list(d.path(), "https://example.org/files/\n");
        assert!(l.check("https://example.org/files/a.bin").is_ok());
        assert!(l.check("http://example.org/files/a.bin").is_err());
        assert!(l.check("https://example.org/other/a.bin").is_err());
        assert!(l.check("ftp://example.org/files/a.bin").is_err());
    }

    #[test]
    fn file_urls_are_normalized_and_resolved() {
        let d = tempfile::tempdir().unwrap();
        let allowed = d.path().join("allowed");
        let outside = d.path().join("outside");
        std::fs::create_dir_all(&allowed).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(allowed.join("a.txt"), b"a").unwrap();
        std::fs::write(outside.join("secret.txt"), b"s").unwrap();
        std::os::unix::fs::symlink(outside.join("secret.txt"), allowed.join("link.txt")).unwrap();
        let l = list(d.path(), &format!("file://{}/\n", allowed.display()));
        let a = format!("file://{}/a.txt", allowed.display());
        match l.check(&a).unwrap() {
            CheckedUrl::File { url, path } => {
                assert_eq!(url, format!("file:{}/a.txt", allowed.display()));
                assert_eq!(path, allowed.join("a.txt").canonicalize().unwrap());
            }
            other => panic!("{other:?}"),
        }
        // file:/ and file:/// are the same.
        assert!(l
            .check(&format!("file:{}/a.txt", allowed.display()))
            .is_ok());
        // `..` escapes, symbolic links out, missing files and other hosts are refused.
        assert!(l
            .check(&format!(
                "file://{}/../outside/secret.txt",
                allowed.display()
            ))
            .is_err());
        let e = l
            .check(&format!("file://{}/link.txt", allowed.display()))
            .unwrap_err();
        assert!(e.to_string().contains("outside"), "{e}");
        let e = l
            .check(&format!("file://{}/none.txt", allowed.display()))
            .unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        assert!(l
            .check(&format!("file://host{}/a.txt", allowed.display()))
            .is_err());
        assert!(l
            .check(&format!("file://{}/secret.txt", outside.display()))
            .is_err());
    }

    #[test]
    fn an_empty_list_refuses_everything_and_changes_are_picked_up() {
        let d = tempfile::tempdir().unwrap();
        let l = list(d.path(), "");
        let e = l.check("http://example.org/a").unwrap_err();
        assert!(e.to_string().contains("disallowed"), "{e}");
        // A later modification time makes the list re-read.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(l.path(), "http://example.org/\n").unwrap();
        let f = std::fs::File::options()
            .append(true)
            .open(l.path())
            .unwrap();
        f.set_modified(SystemTime::now() + std::time::Duration::from_secs(5))
            .unwrap();
        assert!(l.check("http://example.org/a").is_ok());
    }
}
