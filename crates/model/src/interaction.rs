use std::fmt;
use std::str::FromStr;

/// The LDP interaction model of a resource, as stored in Fedora's `interactionModel` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InteractionModel {
    /// `ldp:BasicContainer`.
    BasicContainer,
    /// `ldp:DirectContainer`.
    DirectContainer,
    /// `ldp:IndirectContainer`.
    IndirectContainer,
    /// `ldp:NonRDFSource`: a binary.
    NonRdfSource,
    /// `fedora:NonRdfSourceDescription`: the `fcr:metadata` of a binary.
    NonRdfSourceDescription,
    /// `webac:Acl`: an access control list at `fcr:acl`.
    Acl,
}

impl InteractionModel {
    /// The full IRI written in headers and `Link: rel="type"`.
    pub fn iri(self) -> &'static str {
        match self {
            Self::BasicContainer => "http://www.w3.org/ns/ldp#BasicContainer",
            Self::DirectContainer => "http://www.w3.org/ns/ldp#DirectContainer",
            Self::IndirectContainer => "http://www.w3.org/ns/ldp#IndirectContainer",
            Self::NonRdfSource => "http://www.w3.org/ns/ldp#NonRDFSource",
            Self::NonRdfSourceDescription => {
                "http://fedora.info/definitions/v4/repository#NonRdfSourceDescription"
            }
            Self::Acl => "http://fedora.info/definitions/v4/webac#Acl",
        }
    }

    /// Whether the resource is a container (can hold children).
    pub fn is_container(self) -> bool {
        matches!(
            self,
            Self::BasicContainer | Self::DirectContainer | Self::IndirectContainer
        )
    }

    /// Whether Fedora 6 types the resource `ldp:Container` and `fedora:Container`: the
    /// containers, and ACLs, which it models as containers (though none takes children).
    pub fn is_typed_container(self) -> bool {
        self.is_container() || self == Self::Acl
    }

    /// Whether the resource's children generate membership triples (LDP direct and indirect
    /// containers).
    pub fn generates_membership(self) -> bool {
        matches!(self, Self::DirectContainer | Self::IndirectContainer)
    }

    /// Whether the resource is a binary (LDP-NR).
    pub fn is_binary(self) -> bool {
        self == Self::NonRdfSource
    }

    /// Whether the resource is an RDF source (everything but a binary).
    pub fn is_rdf_source(self) -> bool {
        !self.is_binary()
    }

    /// The rdf:type IRIs the server reports for this model, most specific first.
    pub fn rdf_types(self) -> &'static [&'static str] {
        const RES: &str = "http://www.w3.org/ns/ldp#Resource";
        const RDFS: &str = "http://www.w3.org/ns/ldp#RDFSource";
        const CONT: &str = "http://www.w3.org/ns/ldp#Container";
        match self {
            Self::BasicContainer => &["http://www.w3.org/ns/ldp#BasicContainer", CONT, RDFS, RES],
            Self::DirectContainer => &["http://www.w3.org/ns/ldp#DirectContainer", CONT, RDFS, RES],
            Self::IndirectContainer => &[
                "http://www.w3.org/ns/ldp#IndirectContainer",
                CONT,
                RDFS,
                RES,
            ],
            Self::NonRdfSource => &["http://www.w3.org/ns/ldp#NonRDFSource", RES],
            Self::NonRdfSourceDescription => &[RDFS, RES],
            // Fedora 6 types an ACL as a container (its import needs that: "You must use
            // aclContentPath() for ACL resources" otherwise).
            Self::Acl => &[
                "http://fedora.info/definitions/v4/webac#Acl",
                CONT,
                RDFS,
                RES,
            ],
        }
    }
}

impl fmt::Display for InteractionModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.iri())
    }
}

impl FromStr for InteractionModel {
    type Err = String;

    /// Parses a full IRI, or the `ldp:` short forms clients sometimes send.
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "http://www.w3.org/ns/ldp#BasicContainer" | "ldp:BasicContainer" => {
                Self::BasicContainer
            }
            "http://www.w3.org/ns/ldp#DirectContainer" | "ldp:DirectContainer" => {
                Self::DirectContainer
            }
            "http://www.w3.org/ns/ldp#IndirectContainer" | "ldp:IndirectContainer" => {
                Self::IndirectContainer
            }
            "http://www.w3.org/ns/ldp#NonRDFSource" | "ldp:NonRDFSource" => Self::NonRdfSource,
            "http://fedora.info/definitions/v4/repository#NonRdfSourceDescription" => {
                Self::NonRdfSourceDescription
            }
            "http://fedora.info/definitions/v4/webac#Acl" => Self::Acl,
            other => return Err(format!("unknown interaction model <{other}>")),
        })
    }
}
