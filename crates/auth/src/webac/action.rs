//! Which mode a request needs: Fedora 6's `WebACFilter.isAuthorized`, reduced to its decision.

use super::modes::{Mode, Modes};

/// What a request does, as far as the mode it needs goes. The HTTP layer decides the fields
/// (existence, binary or not, whether a SPARQL Update deletes); see each variant.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Action {
    /// GET, HEAD or OPTIONS on a resource or a description: `acl:Read`.
    Read,
    /// Any method on an ACL (`…/fcr:acl`): `acl:Control`, decided on the resource the ACL
    /// belongs to.
    Control,
    /// PUT. Replacing an existing resource needs `acl:Write` (requirement 5.7.1); creating one
    /// needs `acl:Append` (5.7.1-B). As in Fedora (`WebACAuthorizingRealm`, which takes the
    /// roles of the nearest existing container for a path that does not exist), the modes for
    /// a creation are those of that container, decided as the container's own.
    Put {
        /// Whether the target exists.
        exists: bool,
    },
    /// POST to an existing resource: a container needs `acl:Append` (5.7.2), a binary or its
    /// description `acl:Write` (5.7.3).
    Post {
        /// Whether the target is a binary (LDP-NR) or a binary's description.
        to_binary: bool,
    },
    /// PATCH: `acl:Append` suffices when the request only adds triples (5.7.1-C), else
    /// `acl:Write`.
    Patch {
        /// Whether the body is a SPARQL Update none of whose operations deletes a quad (no
        /// `DELETE DATA` with quads, no `DELETE { … } WHERE` with quads). Anything else,
        /// including a PATCH that is not SPARQL Update, is `false`, as in Fedora.
        inserts_only: bool,
    },
    /// DELETE of a resource: `acl:Write` (5.7.1-A, 5.7.3), on the resource and, as Fedora,
    /// on every resource below it.
    Delete,
}

impl Action {
    /// The one mode that allows the action (with [`Mode::Write`] implying [`Mode::Append`],
    /// the weakest suffices).
    pub fn required(self) -> Mode {
        required(self)
    }

    /// Whether `modes` allow the action.
    pub fn allowed_by(self, modes: Modes) -> bool {
        modes.contains(self.required())
    }
}

/// The one mode that allows `action` (see [`Action`]).
pub fn required(action: Action) -> Mode {
    match action {
        Action::Read => Mode::Read,
        Action::Control => Mode::Control,
        Action::Put { exists: true }
        | Action::Post { to_binary: true }
        | Action::Patch {
            inserts_only: false,
        }
        | Action::Delete => Mode::Write,
        Action::Put { exists: false }
        | Action::Post { to_binary: false }
        | Action::Patch { inserts_only: true } => Mode::Append,
    }
}
