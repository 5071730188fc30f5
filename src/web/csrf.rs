//! Cross-site request forgery protection for the web view's actions (pure). Three checks, all
//! required:
//!
//! - **POST only**: pages are GET, actions are POST (the server refuses other methods), so a
//!   link, an image or a prefetch never acts.
//! - **Same origin**: the browser's `Origin` must be this server (`http://` or `https://` and the
//!   `Host` the browser asked for), and `Sec-Fetch-Site`, which browsers set and a page cannot,
//!   must be `same-origin` when present. A page elsewhere cannot pass either.
//! - **A page token echoed in a header**: every page carries a token the server signed when it
//!   rendered it (`issued.HMAC-SHA256(key, issued)`, the key random per controller process,
//!   valid [`TOKEN_LIFETIME`]); an action must echo it in [`TOKEN_HEADER`]. Only a script of the
//!   page itself can read it, and a custom header cannot be sent cross-origin without a CORS
//!   preflight, which this server never grants. Signed rather than stored, so the server keeps
//!   no state per viewer; a restarted controller refuses older pages' tokens (reload the page).
//!
//! A cookie is never involved: the viewer's bearer token travels in `Authorization`, which a
//! browser never adds by itself, so a forged request would carry no credential anyway; these
//! checks are the second line.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use flotilla_core::hex;

/// The header an action echoes its page's token in.
pub const TOKEN_HEADER: &str = "x-flotilla-csrf";

/// How long a page's token is accepted, in seconds (12 hours).
pub const TOKEN_LIFETIME: i64 = 12 * 3600;

/// The key tokens are signed with.
pub struct CsrfKey(Vec<u8>);

/// The headers of an action request the checks read.
#[derive(Clone, Copy, Debug, Default)]
pub struct ActionHeaders<'a> {
    pub origin: Option<&'a str>,
    pub host: Option<&'a str>,
    pub sec_fetch_site: Option<&'a str>,
    pub token: Option<&'a str>,
}

/// Why a request was refused as possibly forged (answered 403).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CsrfRefusal {
    #[error("the request has no Origin header")]
    NoOrigin,
    #[error("the request comes from another origin ({0})")]
    ForeignOrigin(String),
    #[error("the browser says the request is {0}, not same-origin")]
    CrossSite(String),
    #[error("the request has no page token ({TOKEN_HEADER})")]
    NoToken,
    #[error("the page token is not valid (reload the page)")]
    BadToken,
    #[error("the page token has expired (reload the page)")]
    Expired,
}

impl CsrfKey {
    /// A key of `secret` (random bytes, at least 32).
    #[must_use]
    pub fn new(secret: Vec<u8>) -> Self {
        Self(secret)
    }

    /// The token of a page rendered at `now` (seconds since the epoch).
    #[must_use]
    pub fn issue(&self, now: i64) -> String {
        format!(
            "{now}.{}",
            hex::encode(&self.mac(now).finalize().into_bytes())
        )
    }

    /// Whether `request` passes the checks at `now` (seconds since the epoch).
    ///
    /// # Errors
    /// The first check it fails.
    pub fn check(&self, request: &ActionHeaders<'_>, now: i64) -> Result<(), CsrfRefusal> {
        if let Some(site) = request.sec_fetch_site
            && site != "same-origin"
        {
            return Err(CsrfRefusal::CrossSite(site.to_owned()));
        }
        let origin = request.origin.ok_or(CsrfRefusal::NoOrigin)?;
        let same = request.host.is_some_and(|host| {
            origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"))
                .is_some_and(|authority| authority.eq_ignore_ascii_case(host))
        });
        if !same {
            return Err(CsrfRefusal::ForeignOrigin(origin.to_owned()));
        }
        self.verify(request.token.ok_or(CsrfRefusal::NoToken)?, now)
    }

    /// Whether `token` is one of [`Self::issue`]'s, issued at most [`TOKEN_LIFETIME`] ago.
    fn verify(&self, token: &str, now: i64) -> Result<(), CsrfRefusal> {
        let (issued, mac) = token.split_once('.').ok_or(CsrfRefusal::BadToken)?;
        let issued: i64 = issued.parse().map_err(|_| CsrfRefusal::BadToken)?;
        let mac = hex::decode(mac).ok_or(CsrfRefusal::BadToken)?;
        // Constant-time comparison (hmac's verify_slice).
        self.mac(issued)
            .verify_slice(&mac)
            .map_err(|_| CsrfRefusal::BadToken)?;
        if issued > now || now - issued > TOKEN_LIFETIME {
            return Err(CsrfRefusal::Expired);
        }
        Ok(())
    }

    fn mac(&self, issued: i64) -> Hmac<Sha256> {
        // HMAC takes a key of any length.
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(b"flotilla web view action:");
        mac.update(issued.to_string().as_bytes());
        mac
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    fn key() -> CsrfKey {
        CsrfKey::new(vec![7; 32])
    }

    fn browser(token: &str) -> ActionHeaders<'_> {
        ActionHeaders {
            origin: Some("http://127.0.0.1:8081"),
            host: Some("127.0.0.1:8081"),
            sec_fetch_site: Some("same-origin"),
            token: Some(token),
        }
    }

    #[test]
    fn a_same_origin_request_echoing_its_pages_token_passes() {
        let token = key().issue(NOW);
        assert_eq!(key().check(&browser(&token), NOW + 60), Ok(()));
        let without_fetch_metadata = ActionHeaders {
            sec_fetch_site: None,
            ..browser(&token)
        };
        assert_eq!(key().check(&without_fetch_metadata, NOW), Ok(()));
    }

    #[test]
    fn another_origin_or_site_is_refused() {
        let token = key().issue(NOW);
        let foreign = ActionHeaders {
            origin: Some("http://evil.example"),
            ..browser(&token)
        };
        assert_eq!(
            key().check(&foreign, NOW),
            Err(CsrfRefusal::ForeignOrigin("http://evil.example".to_owned()))
        );
        let cross = ActionHeaders {
            sec_fetch_site: Some("cross-site"),
            ..browser(&token)
        };
        assert_eq!(
            key().check(&cross, NOW),
            Err(CsrfRefusal::CrossSite("cross-site".to_owned()))
        );
        let no_origin = ActionHeaders {
            origin: None,
            ..browser(&token)
        };
        assert_eq!(key().check(&no_origin, NOW), Err(CsrfRefusal::NoOrigin));
    }

    #[test]
    fn a_missing_forged_or_old_token_is_refused() {
        let none = ActionHeaders {
            token: None,
            ..browser("")
        };
        assert_eq!(key().check(&none, NOW), Err(CsrfRefusal::NoToken));
        let other_key = CsrfKey::new(vec![8; 32]).issue(NOW);
        assert_eq!(
            key().check(&browser(&other_key), NOW),
            Err(CsrfRefusal::BadToken)
        );
        let token = key().issue(NOW);
        let moved = token.replacen(&NOW.to_string(), &(NOW + 1).to_string(), 1);
        assert_eq!(
            key().check(&browser(&moved), NOW),
            Err(CsrfRefusal::BadToken)
        );
        assert_eq!(
            key().check(&browser("junk"), NOW),
            Err(CsrfRefusal::BadToken)
        );
        assert_eq!(
            key().check(&browser(&token), NOW + TOKEN_LIFETIME + 1),
            Err(CsrfRefusal::Expired)
        );
    }
}
