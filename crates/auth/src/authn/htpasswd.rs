//! Users of an Apache htpasswd file: its entries, and the file itself, reloaded when it
//! changes, with verified passwords cached.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Mutex, RwLock};

use super::cache::{BoundedCache, Key};
use super::password_hash::PasswordHash;
use super::{AuthnError, Principal};

/// How often, at most, the file's metadata is looked at, in milliseconds.
const CHECK_INTERVAL_MS: u64 = 1000;

/// Why an htpasswd file could not be loaded.
#[derive(Debug)]
pub(crate) enum LoadError {
    /// The file could not be read.
    Read(std::io::Error),
    /// A line is not `user:hash`, or the file is not UTF-8.
    Parse {
        /// 1-based.
        line: usize,
        /// What is wrong.
        reason: String,
    },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Read(error) => write!(f, "cannot read it: {error}"),
            Self::Parse { line, reason } => write!(f, "line {line}: {reason}"),
        }
    }
}

/// The users of one version of the file.
pub(crate) struct Table {
    users: HashMap<String, PasswordHash>,
    /// A hash to verify unknown users' passwords against, so that the response time does
    /// not tell whether a user exists.
    decoy: Option<PasswordHash>,
}

impl Table {
    /// Parses the file's contents. Comments (`#`) and blank lines are skipped; entries whose
    /// hash is of a refused kind are skipped with a warning naming user and line; a line that
    /// is not `user:hash` is an error. Of duplicate users the first counts, as in Apache.
    pub(crate) fn parse(path: &Path, contents: &[u8]) -> Result<Self, LoadError> {
        let text = std::str::from_utf8(contents).map_err(|error| LoadError::Parse {
            line: 1 + contents[..error.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count(),
            reason: "not UTF-8".into(),
        })?;
        let mut users = HashMap::new();
        let mut decoy = None;
        for (index, line) in text.lines().enumerate() {
            let line_number = index + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let parse_error = |reason: &str| LoadError::Parse {
                line: line_number,
                reason: reason.into(),
            };
            let (user, rest) = line
                .split_once(':')
                .ok_or_else(|| parse_error("no ':' between user and hash"))?;
            if user.is_empty() {
                return Err(parse_error("empty user name"));
            }
            // As Apache's mod_authn_file: the hash ends at the next ':', if any.
            let field = rest.split(':').next().unwrap_or_default();
            let hash = match PasswordHash::parse(field) {
                Ok(hash) => hash,
                Err(why) => {
                    tracing::warn!(
                        path = %path.display(), line = line_number, user,
                        "htpasswd entry ignored, this user cannot log in: {why}"
                    );
                    continue;
                }
            };
            if users.contains_key(user) {
                tracing::warn!(
                    path = %path.display(), line = line_number, user,
                    "htpasswd user listed again; the first entry counts"
                );
                continue;
            }
            decoy.get_or_insert_with(|| hash.clone());
            users.insert(user.to_owned(), hash);
        }
        Ok(Self { users, decoy })
    }

    /// The hash of `user`.
    pub(crate) fn get(&self, user: &str) -> Option<&PasswordHash> {
        self.users.get(user)
    }

    /// How many users can log in.
    pub(crate) fn len(&self) -> usize {
        self.users.len()
    }
}

/// What identifies one version of the file without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fingerprint {
    modified: Option<std::time::SystemTime>,
    size: u64,
    /// Inode and, on Unix, the change time (which also catches `chmod`).
    inode: u64,
    changed: (i64, i64),
}

impl Fingerprint {
    fn of(metadata: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let (inode, changed) = {
            use std::os::unix::fs::MetadataExt;
            (metadata.ino(), (metadata.ctime(), metadata.ctime_nsec()))
        };
        #[cfg(not(unix))]
        let (inode, changed) = (0, (0, 0));
        Self {
            modified: metadata.modified().ok(),
            size: metadata.len(),
            inode,
            changed,
        }
    }
}

/// What the last look at the file found.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    /// The file with this fingerprint (loaded, or refused with a warning).
    File(Fingerprint),
    /// No metadata, for this reason (already warned about).
    Missing(std::io::ErrorKind),
}

/// Reads and parses the file, with the fingerprint of what was read.
fn load(path: &Path) -> Result<(Fingerprint, Table), LoadError> {
    let mut file = std::fs::File::open(path).map_err(LoadError::Read)?;
    let fingerprint = Fingerprint::of(&file.metadata().map_err(LoadError::Read)?);
    let mut contents = Vec::new();
    std::io::Read::read_to_end(&mut file, &mut contents).map_err(LoadError::Read)?;
    Ok((fingerprint, Table::parse(path, &contents)?))
}

/// The outcome of checking a user's password.
pub(crate) enum Check {
    /// The password is right.
    Accepted(Principal),
    /// The user exists, the password is wrong.
    WrongPassword,
    /// No such user (nothing was verified: see [`HtpasswdFile::spend_decoy`]).
    UnknownUser,
}

/// The current table and the passwords verified against it.
struct State {
    table: Arc<Table>,
    /// Counts reloads, so that a verification against a replaced table is not cached.
    generation: u64,
    cache: BoundedCache<Principal>,
}

/// An htpasswd file, reloaded at most once a second when its metadata changes.
pub(crate) struct HtpasswdFile {
    path: PathBuf,
    state: RwLock<State>,
    /// What the last look at the file found; also serialises reloads.
    seen: Mutex<Seen>,
    /// When the file was last looked at, in milliseconds since `started`.
    last_check_ms: AtomicU64,
    started: Instant,
}

impl HtpasswdFile {
    /// Loads the file; fails if it cannot be read or parsed.
    pub(crate) fn open(path: PathBuf) -> Result<Self, AuthnError> {
        let (fingerprint, table) = load(&path).map_err(|error| match error {
            LoadError::Read(source) => AuthnError::HtpasswdRead {
                path: path.clone(),
                source,
            },
            LoadError::Parse { line, reason } => AuthnError::HtpasswdParse {
                path: path.clone(),
                line,
                reason,
            },
        })?;
        tracing::info!(path = %path.display(), users = table.len(), "htpasswd file loaded");
        Ok(Self {
            path,
            state: RwLock::new(State {
                table: Arc::new(table),
                generation: 0,
                cache: BoundedCache::new(),
            }),
            seen: Mutex::new(Seen::File(fingerprint)),
            last_check_ms: AtomicU64::new(0),
            started: Instant::now(),
        })
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Checks `user`'s `password`; `key` is the cache key of `user:password`. A cached
    /// success costs a hash-map look-up; otherwise the password is verified against the
    /// table (a bcrypt round for bcrypt entries) and a success is cached.
    pub(crate) fn check(&self, user: &str, password: &str, key: &Key) -> Check {
        self.reload_if_due();
        let (table, generation) = {
            let state = self.state.read();
            if let Some(principal) = state.cache.get(key) {
                return Check::Accepted(principal.clone());
            }
            (Arc::clone(&state.table), state.generation)
        };
        let Some(hash) = table.get(user) else {
            return Check::UnknownUser;
        };
        if !hash.verify(password.as_bytes()) {
            return Check::WrongPassword;
        }
        let principal = Principal {
            name: user.to_owned(),
            roles: Vec::new(),
        };
        let mut state = self.state.write();
        if state.generation == generation {
            state.cache.insert(*key, principal.clone());
        }
        Check::Accepted(principal)
    }

    /// Whether these credentials (by their cache key) were verified already.
    pub(crate) fn cached(&self, key: &Key) -> Option<Principal> {
        self.state.read().cache.get(key).cloned()
    }

    /// Verifies `password` against some user's hash and ignores the outcome, so that
    /// refusing an unknown user takes as long as refusing a wrong password.
    pub(crate) fn spend_decoy(&self, password: &str) {
        let table = Arc::clone(&self.state.read().table);
        if let Some(decoy) = &table.decoy {
            std::hint::black_box(decoy.verify(password.as_bytes()));
        }
    }

    /// Looks at the file's metadata if the last look is older than [`CHECK_INTERVAL_MS`], and
    /// reloads it if it changed. Only one caller looks; the others go on with the table
    /// they have.
    fn reload_if_due(&self) {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.last_check_ms.load(Ordering::Relaxed);
        if now.saturating_sub(last) < CHECK_INTERVAL_MS {
            return;
        }
        if self
            .last_check_ms
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        self.reload_if_changed();
    }

    /// Reloads the file if its metadata differs from the last look. If it cannot be read or
    /// parsed, keeps the current table and warns, once for each change of the file.
    fn reload_if_changed(&self) {
        let mut seen = self.seen.lock();
        let observed = match std::fs::metadata(&self.path) {
            Ok(metadata) => Seen::File(Fingerprint::of(&metadata)),
            Err(error) => {
                let observed = Seen::Missing(error.kind());
                if *seen != observed {
                    tracing::warn!(
                        path = %self.path.display(),
                        "htpasswd file cannot be read: {error}; keeping the users loaded before"
                    );
                    *seen = observed;
                }
                return;
            }
        };
        if *seen == observed {
            return;
        }
        match load(&self.path) {
            Ok((fingerprint, table)) => {
                tracing::info!(
                    path = %self.path.display(), users = table.len(), "htpasswd file reloaded"
                );
                let mut state = self.state.write();
                state.table = Arc::new(table);
                state.generation += 1;
                state.cache.clear();
                *seen = Seen::File(fingerprint);
            }
            Err(error) => {
                tracing::warn!(
                    path = %self.path.display(),
                    "htpasswd file changed but cannot be loaded ({error}); keeping the users loaded before"
                );
                *seen = observed;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;
    use std::time::Duration;

    use super::*;
    use crate::authn::cache::Keyer;

    // Entries made with `htpasswd -nb` (`-B -C 4`, `-s`, `-m`) of Apache 2.4.
    const ALICE_BCRYPT: &str = "alice:$2y$04$g80Ydrwr/kVgD34GtHqQ1u8vd/77u6UII8mARYqvB/HdPHCpFxHsi";
    const ALICE_PASSWORD: &str = "x";
    const BOB_SHA1: &str = "bob:{SHA}L55TUjtiq8FBorTWAZ0jy6g129A=";
    const CAROL_APR1: &str = "carol:$apr1$uDuKhmRP$TgjZfq/mbxwKRSw0W0uAF0";
    const HORSE: &str = "correct horse";

    /// Waits past the interval between two looks at the file.
    fn wait_for_next_check() {
        std::thread::sleep(Duration::from_millis(CHECK_INTERVAL_MS + 100));
    }

    fn write(path: &Path, lines: &[&str]) {
        std::fs::write(path, lines.join("\n") + "\n").expect("write htpasswd file");
    }

    struct Fixture {
        _dir: tempfile::TempDir,
        path: PathBuf,
        keyer: Keyer,
    }

    impl Fixture {
        fn new(lines: &[&str]) -> Self {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join("htpasswd");
            write(&path, lines);
            Self {
                _dir: dir,
                path,
                keyer: Keyer::random(),
            }
        }

        fn open(&self) -> HtpasswdFile {
            HtpasswdFile::open(self.path.clone()).expect("open htpasswd file")
        }

        /// `Some(true)` when accepted, `Some(false)` for a wrong password, `None` for an
        /// unknown user.
        fn check(&self, file: &HtpasswdFile, user: &str, password: &str) -> Option<bool> {
            let key = self.keyer.key(format!("{user}:{password}").as_bytes());
            match file.check(user, password, &key) {
                Check::Accepted(principal) => {
                    assert_eq!(principal.name, user);
                    assert!(principal.roles.is_empty());
                    Some(true)
                }
                Check::WrongPassword => Some(false),
                Check::UnknownUser => None,
            }
        }
    }

    fn cached_entries(file: &HtpasswdFile) -> usize {
        file.state.read().cache.len()
    }

    #[test]
    fn parses_users_comments_blank_lines_and_skips_refused_entries() {
        let text = format!(
            "# users of arca\n\n{ALICE_BCRYPT}\n  {BOB_SHA1}  \r\n{CAROL_APR1}:extra:fields\n\
             eve:y6MvPRk/XIxAE\nfrank:plain\nbob:$apr1$efBQIzZx$ZVCVqp2bb8aiwYFAV2qQO.\n"
        );
        let table = Table::parse(Path::new("test"), text.as_bytes()).expect("valid file");
        assert_eq!(table.len(), 3);
        assert!(table.get("alice").is_some_and(|h| h.verify(b"x")));
        assert!(table.get("bob").is_some_and(|h| h.verify(HORSE.as_bytes())));
        assert!(table
            .get("carol")
            .is_some_and(|h| h.verify(HORSE.as_bytes())));
        // Crypt and plaintext entries are refused, not accepted with any password.
        assert!(table.get("eve").is_none());
        assert!(table.get("frank").is_none());
        assert!(table.decoy.is_some());
    }

    #[test]
    fn malformed_lines_are_errors_with_their_line_number() {
        let error = |text: &[u8]| match Table::parse(Path::new("test"), text) {
            Err(LoadError::Parse { line, reason }) => (line, reason),
            other => panic!("expected a parse error, got {:?}", other.err()),
        };
        assert_eq!(
            error(b"# ok\nalice\n"),
            (2, "no ':' between user and hash".into())
        );
        assert_eq!(error(b"\n\n:{SHA}L55TUjtiq8FBorTWAZ0jy6g129A=\n").0, 3);
        assert_eq!(error(b"a:b\nb:c\n\xff:d\n"), (3, "not UTF-8".into()));
    }

    #[test]
    fn an_unreadable_file_fails_at_start() {
        let dir = tempfile::tempdir().expect("temp dir");
        let missing = HtpasswdFile::open(dir.path().join("missing"));
        assert!(matches!(missing, Err(AuthnError::HtpasswdRead { .. })));
        let fixture = Fixture::new(&["alice"]);
        let malformed = HtpasswdFile::open(fixture.path.clone());
        assert!(matches!(
            malformed,
            Err(AuthnError::HtpasswdParse { line: 1, .. })
        ));
    }

    #[test]
    fn checks_and_caches_successes_only() {
        let fixture = Fixture::new(&[ALICE_BCRYPT, BOB_SHA1]);
        let file = fixture.open();
        assert_eq!(fixture.check(&file, "alice", "wrong"), Some(false));
        assert_eq!(fixture.check(&file, "nobody", "x"), None);
        assert_eq!(cached_entries(&file), 0);
        assert_eq!(fixture.check(&file, "alice", ALICE_PASSWORD), Some(true));
        assert_eq!(cached_entries(&file), 1);
        assert_eq!(fixture.check(&file, "alice", ALICE_PASSWORD), Some(true));
        assert_eq!(fixture.check(&file, "bob", HORSE), Some(true));
        assert_eq!(cached_entries(&file), 2);
        assert_eq!(fixture.check(&file, "alice", "wrong"), Some(false));
    }

    #[test]
    fn reloads_a_changed_file_and_forgets_cached_passwords() {
        let fixture = Fixture::new(&[ALICE_BCRYPT]);
        let file = fixture.open();
        assert_eq!(fixture.check(&file, "alice", ALICE_PASSWORD), Some(true));

        // Same user, new password (and carol added); the old password was cached.
        write(
            &fixture.path,
            &["alice:$apr1$uDuKhmRP$TgjZfq/mbxwKRSw0W0uAF0", CAROL_APR1],
        );
        wait_for_next_check();
        assert_eq!(fixture.check(&file, "alice", HORSE), Some(true));
        assert_eq!(fixture.check(&file, "alice", ALICE_PASSWORD), Some(false));
        assert_eq!(fixture.check(&file, "carol", HORSE), Some(true));

        // A user removed from the file is unknown at once after the next look.
        write(&fixture.path, &[CAROL_APR1]);
        wait_for_next_check();
        assert_eq!(fixture.check(&file, "alice", HORSE), None);
    }

    #[test]
    fn does_not_look_at_the_file_more_than_once_a_second() {
        let fixture = Fixture::new(&[ALICE_BCRYPT]);
        let file = fixture.open();
        wait_for_next_check();
        assert_eq!(fixture.check(&file, "alice", ALICE_PASSWORD), Some(true));
        // Changed right after a look: still the old table until a second has passed.
        write(&fixture.path, &[BOB_SHA1]);
        assert_eq!(fixture.check(&file, "bob", HORSE), None);
        wait_for_next_check();
        assert_eq!(fixture.check(&file, "bob", HORSE), Some(true));
    }

    #[test]
    fn keeps_the_last_good_table_when_the_file_cannot_be_loaded() {
        let fixture = Fixture::new(&[ALICE_BCRYPT, BOB_SHA1]);
        let file = fixture.open();
        assert_eq!(fixture.check(&file, "alice", ALICE_PASSWORD), Some(true));

        // Malformed: bob was never checked, so this goes to the table, not the cache.
        write(&fixture.path, &["not an entry"]);
        wait_for_next_check();
        assert_eq!(fixture.check(&file, "bob", HORSE), Some(true));
        assert_eq!(fixture.check(&file, "alice", ALICE_PASSWORD), Some(true));
        assert!(matches!(*file.seen.lock(), Seen::File(_)));

        // Gone, then a directory in its place: still the same users.
        std::fs::remove_file(&fixture.path).expect("remove");
        wait_for_next_check();
        assert_eq!(fixture.check(&file, "bob", "wrong"), Some(false));
        assert_eq!(
            *file.seen.lock(),
            Seen::Missing(std::io::ErrorKind::NotFound)
        );
        std::fs::create_dir(&fixture.path).expect("mkdir");
        wait_for_next_check();
        assert_eq!(fixture.check(&file, "alice", ALICE_PASSWORD), Some(true));
        assert_eq!(fixture.check(&file, "carol", HORSE), None);

        // Good again: loaded.
        std::fs::remove_dir(&fixture.path).expect("rmdir");
        write(&fixture.path, &[CAROL_APR1]);
        wait_for_next_check();
        assert_eq!(fixture.check(&file, "carol", HORSE), Some(true));
        assert_eq!(fixture.check(&file, "bob", HORSE), None);
    }

    /// Runs Apache's `htpasswd` with `args`; `None` when it is not installed.
    fn htpasswd_tool(args: &[&str]) -> Option<()> {
        match Command::new("htpasswd").args(args).output() {
            Ok(output) if output.status.success() => Some(()),
            Ok(output) => panic!(
                "htpasswd {args:?} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(error) => panic!("cannot run htpasswd: {error}"),
        }
    }

    #[test]
    fn accepts_files_written_by_the_htpasswd_tool() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("users");
        let path_arg = path.to_str().expect("UTF-8 temp path");
        if htpasswd_tool(&["-bcB", "-C", "4", path_arg, "alice", "bcrypt pw"]).is_none() {
            eprintln!("NOT RUN: htpasswd (apache2-utils) is not installed");
            return;
        }
        let added = [
            ["-bs", path_arg, "bob", "sha1 pw"],
            ["-bm", path_arg, "carol", "md5 pw:with colon"],
            ["-b", path_arg, "dave", "default pw"],
            ["-bd", path_arg, "eve", "crypt pw"],
            ["-bp", path_arg, "frank", "plain pw"],
        ];
        for args in added {
            htpasswd_tool(&args);
        }
        let keyer = Keyer::random();
        let file = HtpasswdFile::open(path.clone()).expect("open");
        let check = |user: &str, password: &str| {
            let key = keyer.key(format!("{user}:{password}").as_bytes());
            match file.check(user, password, &key) {
                Check::Accepted(_) => Some(true),
                Check::WrongPassword => Some(false),
                Check::UnknownUser => None,
            }
        };
        for (user, password) in [
            ("alice", "bcrypt pw"),
            ("bob", "sha1 pw"),
            ("carol", "md5 pw:with colon"),
            ("dave", "default pw"),
        ] {
            assert_eq!(check(user, password), Some(true), "{user}");
            assert_eq!(check(user, "wrong"), Some(false), "{user}");
        }
        assert_eq!(check("eve", "crypt pw"), None);
        assert_eq!(check("frank", "plain pw"), None);

        // Each kind of file the tool creates from scratch (`-c`).
        for flag in ["-bcB", "-bcs", "-bcm"] {
            htpasswd_tool(&[flag, path_arg, "grace", "fresh"]);
            let file = HtpasswdFile::open(path.clone()).expect("open");
            let key = keyer.key(b"grace:fresh");
            assert!(
                matches!(file.check("grace", "fresh", &key), Check::Accepted(_)),
                "{flag}"
            );
            let key = keyer.key(b"grace:stale");
            assert!(
                matches!(file.check("grace", "stale", &key), Check::WrongPassword),
                "{flag}"
            );
        }
    }

    #[test]
    fn picks_up_a_password_changed_by_the_htpasswd_tool() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("users");
        let path_arg = path.to_str().expect("UTF-8 temp path");
        if htpasswd_tool(&["-bcB", "-C", "4", path_arg, "alice", "old"]).is_none() {
            eprintln!("NOT RUN: htpasswd (apache2-utils) is not installed");
            return;
        }
        let keyer = Keyer::random();
        let file = HtpasswdFile::open(path.clone()).expect("open");
        let accepted = |password: &str| {
            let key = keyer.key(format!("alice:{password}").as_bytes());
            matches!(file.check("alice", password, &key), Check::Accepted(_))
        };
        assert!(accepted("old"));
        htpasswd_tool(&["-bB", "-C", "4", path_arg, "alice", "new"]);
        wait_for_next_check();
        assert!(accepted("new"));
        assert!(!accepted("old"));
    }
}
