//! Access modes and sets of them.

use std::fmt;
use std::ops::{BitOr, BitOrAssign};

use super::vocab;

/// One WebAC access mode.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Mode {
    /// `acl:Read`: GET, HEAD and OPTIONS.
    Read,
    /// `acl:Write`: PUT, POST, PATCH and DELETE; implies [`Mode::Append`].
    Write,
    /// `acl:Append`: add to a resource without changing or removing what is there (POST to a
    /// container, PUT creating a new resource, PATCH that only inserts).
    Append,
    /// `acl:Control`: read and change the ACL itself.
    Control,
}

impl Mode {
    /// The four modes, in the order of their IRIs in the WebAC vocabulary.
    pub const ALL: [Mode; 4] = [Mode::Read, Mode::Write, Mode::Append, Mode::Control];

    /// The mode's IRI, e.g. `http://www.w3.org/ns/auth/acl#Read`.
    pub fn iri(self) -> &'static str {
        match self {
            Mode::Read => vocab::READ,
            Mode::Write => vocab::WRITE,
            Mode::Append => vocab::APPEND,
            Mode::Control => vocab::CONTROL,
        }
    }

    /// The mode an IRI names; `None` for anything but the four WebAC modes.
    pub fn from_iri(iri: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.iri() == iri)
    }

    const fn bit(self) -> u8 {
        match self {
            Mode::Read => 1,
            Mode::Write => 2,
            Mode::Append => 4,
            Mode::Control => 8,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Read => "acl:Read",
            Mode::Write => "acl:Write",
            Mode::Append => "acl:Append",
            Mode::Control => "acl:Control",
        })
    }
}

/// A set of modes (a small bitset). Adding [`Mode::Write`] adds [`Mode::Append`] too, as in
/// WebAC: whoever may write may append.
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
pub struct Modes(u8);

impl Modes {
    /// No mode at all.
    pub const NONE: Modes = Modes(0);
    /// All four modes.
    pub const ALL: Modes = Modes(0b1111);

    /// Whether `m` is in the set.
    pub fn contains(self, m: Mode) -> bool {
        self.0 & m.bit() != 0
    }

    /// Whether every mode of `other` is in the set.
    pub fn contains_all(self, other: Modes) -> bool {
        self.0 & other.0 == other.0
    }

    /// The set with `m` added (and [`Mode::Append`] with [`Mode::Write`]).
    #[must_use]
    pub fn with(self, m: Mode) -> Self {
        let implied = if m == Mode::Write {
            Mode::Append.bit()
        } else {
            0
        };
        Modes(self.0 | m.bit() | implied)
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The modes in the set, in [`Mode::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Mode> {
        Mode::ALL.into_iter().filter(move |m| self.contains(*m))
    }
}

impl From<Mode> for Modes {
    fn from(m: Mode) -> Self {
        Modes::NONE.with(m)
    }
}

impl BitOr for Modes {
    type Output = Modes;

    fn bitor(self, rhs: Modes) -> Modes {
        Modes(self.0 | rhs.0)
    }
}

impl BitOrAssign for Modes {
    fn bitor_assign(&mut self, rhs: Modes) {
        self.0 |= rhs.0;
    }
}

impl FromIterator<Mode> for Modes {
    fn from_iter<I: IntoIterator<Item = Mode>>(iter: I) -> Self {
        iter.into_iter().fold(Modes::NONE, Modes::with)
    }
}
