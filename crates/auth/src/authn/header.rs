//! Parsing the `Authorization` header into the credentials it carries.

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;

use super::Rejected;

/// Standard base64 that accepts a value with or without its padding, as clients differ.
const BASIC_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// What an `Authorization` header offers.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Credentials<'a> {
    /// HTTP Basic (RFC 7617).
    Basic(Basic),
    /// A bearer token (RFC 6750), not yet checked to be a JWT.
    Bearer(&'a str),
}

/// A decoded Basic credential, `user:password`.
#[derive(PartialEq, Eq)]
pub(crate) struct Basic {
    /// The decoded value, user and password with the `:` between them.
    decoded: String,
    /// Where the first `:` is.
    colon: usize,
}

impl Basic {
    /// The user name: everything before the first `:`.
    pub(crate) fn user(&self) -> &str {
        &self.decoded[..self.colon]
    }

    /// The password: everything after the first `:`.
    pub(crate) fn password(&self) -> &str {
        &self.decoded[self.colon + 1..]
    }

    /// `user:password`, as the client sent it.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        self.decoded.as_bytes()
    }
}

impl std::fmt::Debug for Basic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Basic")
            .field("user", &self.user())
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Parses an `Authorization` header value. Scheme names are case-insensitive; any scheme
/// but Basic and Bearer, and any malformed value, is refused.
pub(crate) fn parse(value: &[u8]) -> Result<Credentials<'_>, Rejected> {
    let value = std::str::from_utf8(value)
        .map_err(|_| Rejected::new("Authorization header is not UTF-8"))?
        .trim_matches([' ', '\t']);
    let (scheme, rest) = value.split_once([' ', '\t']).unwrap_or((value, ""));
    let rest = rest.trim_start_matches([' ', '\t']);
    if scheme.eq_ignore_ascii_case("basic") {
        parse_basic(rest).map(Credentials::Basic)
    } else if scheme.eq_ignore_ascii_case("bearer") {
        if rest.is_empty() {
            return Err(Rejected::new("Bearer credentials without a token"));
        }
        Ok(Credentials::Bearer(rest))
    } else {
        let shown: String = scheme.chars().take(32).collect();
        Err(Rejected::new(format!(
            "unsupported authorization scheme {shown:?}"
        )))
    }
}

/// Decodes the token of Basic credentials into user and password.
fn parse_basic(token: &str) -> Result<Basic, Rejected> {
    if token.is_empty() {
        return Err(Rejected::new("Basic credentials without a value"));
    }
    let bytes = BASIC_BASE64
        .decode(token)
        .map_err(|_| Rejected::new("Basic credentials are not valid base64"))?;
    let decoded =
        String::from_utf8(bytes).map_err(|_| Rejected::new("Basic credentials are not UTF-8"))?;
    let colon = decoded
        .find(':')
        .ok_or_else(|| Rejected::new("Basic credentials without a ':' after the user"))?;
    if colon == 0 {
        return Err(Rejected::new("Basic credentials with an empty user name"));
    }
    Ok(Basic { decoded, colon })
}

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose::STANDARD;

    use super::*;

    fn basic_header(scheme: &str, user_password: &str) -> Vec<u8> {
        format!("{scheme} {}", STANDARD.encode(user_password)).into_bytes()
    }

    fn basic(value: &[u8]) -> (String, String) {
        match parse(value) {
            Ok(Credentials::Basic(basic)) => (basic.user().into(), basic.password().into()),
            other => panic!("expected Basic credentials, got {other:?}"),
        }
    }

    fn refused(value: &[u8]) -> String {
        match parse(value) {
            Err(rejected) => rejected.detail().to_owned(),
            Ok(other) => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn basic_splits_at_the_first_colon() {
        let (user, password) = basic(&basic_header("Basic", "carol:pässwörd:with:colons"));
        assert_eq!(user, "carol");
        assert_eq!(password, "pässwörd:with:colons");
        assert_eq!(
            basic(&basic_header("Basic", "dave:")),
            ("dave".into(), "".into())
        );
    }

    #[test]
    fn scheme_names_are_case_insensitive_and_whitespace_is_tolerated() {
        let expected = ("alice".to_owned(), "pw".to_owned());
        assert_eq!(basic(&basic_header("basic", "alice:pw")), expected);
        assert_eq!(basic(&basic_header("BASIC", "alice:pw")), expected);
        let spaced = format!(" Basic \t {}  ", STANDARD.encode("alice:pw"));
        assert_eq!(basic(spaced.as_bytes()), expected);
        // Without padding ("alice:pw" encodes to "YWxpY2U6cHc=").
        assert_eq!(basic(b"Basic YWxpY2U6cHc"), expected);

        assert_eq!(parse(b"bearer a.b.c"), Ok(Credentials::Bearer("a.b.c")));
        assert_eq!(parse(b"BEARER  a.b.c "), Ok(Credentials::Bearer("a.b.c")));
    }

    #[test]
    fn malformed_values_are_refused() {
        assert!(refused(b"Basic !!!notbase64").contains("base64"));
        assert!(refused(&basic_header("Basic", "no-colon")).contains("':'"));
        assert!(refused(&basic_header("Basic", ":password")).contains("empty user"));
        assert!(refused(b"Basic").contains("without a value"));
        assert!(refused(b"Basic ").contains("without a value"));
        assert!(refused(b"Bearer").contains("without a token"));
        assert!(refused(b"").contains("unsupported"));
        assert!(refused(b"Basic \xff\xfe").contains("not UTF-8"));
        // Base64 of bytes that are not UTF-8.
        let latin1 = format!("Basic {}", STANDARD.encode(b"j\xf6rg:pw"));
        assert!(refused(latin1.as_bytes()).contains("not UTF-8"));
    }

    #[test]
    fn other_schemes_are_refused() {
        assert!(refused(b"Digest username=\"alice\", realm=\"arca\"").contains("Digest"));
        assert!(refused(b"Negotiate YIIB").contains("Negotiate"));
        assert!(refused(b"Basicx YWxpY2U6cHc=").contains("Basicx"));
    }
}
