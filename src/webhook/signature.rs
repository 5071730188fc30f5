//! Whether a webhook comes from the host it claims, by that host's own mechanism, with the
//! shared secrets under Argo CD's keys of its settings Secret (`webhook.github.secret`, …):
//! GitHub signs the body with HMAC-SHA256 (`X-Hub-Signature-256: sha256=<hex>`, or HMAC-SHA1 in
//! the older `X-Hub-Signature: sha1=<hex>`); GitLab sends the secret itself as `X-Gitlab-Token`;
//! Bitbucket Server, and Bitbucket Cloud webhooks given a secret, sign with HMAC-SHA256 in
//! `X-Hub-Signature: sha256=<hex>` (a Cloud webhook without a secret is told by its
//! `X-Hook-UUID`, Argo CD's `webhook.bitbucket.uuid`); Gitea and Forgejo (`X-Gitea-Signature` /
//! `X-Forgejo-Signature`) and Gogs (`X-Gogs-Signature`) send the HMAC-SHA256 as bare hex.
//! Every comparison takes the same time whatever the bytes (HMAC's own check, `subtle` for
//! tokens). A provider with no secret configured is refused: nothing unsigned is taken. Pure.

use std::collections::BTreeMap;

use hmac::{Hmac, Mac};
use hyper::HeaderMap;
use subtle::ConstantTimeEq;

use super::provider::Provider;
use flotilla_core::hex;

/// The shared secrets by key (`webhook.github.secret`, …), as the settings Secret holds them.
pub type WebhookSecrets = BTreeMap<String, Vec<u8>>;

/// Why a webhook is not taken as its provider's.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    #[error("no secret for {provider} webhooks: set {key} in the Secret {secret}")]
    NoSecret {
        provider: &'static str,
        key: &'static str,
        secret: String,
    },
    #[error("{provider} webhook without {header}")]
    Unsigned {
        provider: &'static str,
        header: &'static str,
    },
    #[error("{provider} webhook: {header} is not {expected}")]
    Malformed {
        provider: &'static str,
        header: &'static str,
        expected: &'static str,
    },
    #[error("{provider} webhook: {header} does not match the secret")]
    Mismatch {
        provider: &'static str,
        header: &'static str,
    },
}

/// Which digest an HMAC signature uses.
#[derive(Clone, Copy)]
enum Digest {
    Sha256,
    Sha1,
}

/// How one provider proves a webhook: the header, what it holds, and the secret's key.
struct Proof {
    header: &'static str,
    kind: ProofKind,
    key: &'static str,
}

#[derive(Clone, Copy)]
enum ProofKind {
    /// `<prefix><hex HMAC of the body>`.
    Hmac(Digest, &'static str),
    /// The secret itself.
    Token,
}

const fn hmac_proof(
    header: &'static str,
    digest: Digest,
    prefix: &'static str,
    key: &'static str,
) -> Proof {
    Proof {
        header,
        kind: ProofKind::Hmac(digest, prefix),
        key,
    }
}

/// The proofs `provider` may give, in order of preference, with the keys of their secrets.
fn proofs(provider: Provider, secrets: &WebhookSecrets) -> Vec<Proof> {
    const GITHUB: &str = "webhook.github.secret";
    const GOGS: &str = "webhook.gogs.secret";
    const GITEA: &str = "webhook.gitea.secret";
    const BITBUCKET: &str = "webhook.bitbucket.secret";
    match provider {
        Provider::GitHub => vec![
            hmac_proof("x-hub-signature-256", Digest::Sha256, "sha256=", GITHUB),
            hmac_proof("x-hub-signature", Digest::Sha1, "sha1=", GITHUB),
        ],
        Provider::GitLab => vec![Proof {
            header: "x-gitlab-token",
            kind: ProofKind::Token,
            key: "webhook.gitlab.secret",
        }],
        Provider::Bitbucket if secrets.contains_key(BITBUCKET) => vec![hmac_proof(
            "x-hub-signature",
            Digest::Sha256,
            "sha256=",
            BITBUCKET,
        )],
        Provider::Bitbucket => vec![Proof {
            header: "x-hook-uuid",
            kind: ProofKind::Token,
            key: "webhook.bitbucket.uuid",
        }],
        Provider::BitbucketServer => vec![hmac_proof(
            "x-hub-signature",
            Digest::Sha256,
            "sha256=",
            "webhook.bitbucketserver.secret",
        )],
        // Argo CD has no Gitea key; its users verify Gitea with the Gogs secret.
        Provider::Gitea => {
            let key = if secrets.contains_key(GITEA) {
                GITEA
            } else {
                GOGS
            };
            vec![
                hmac_proof("x-forgejo-signature", Digest::Sha256, "", key),
                hmac_proof("x-gitea-signature", Digest::Sha256, "", key),
            ]
        }
        Provider::Gogs => vec![hmac_proof("x-gogs-signature", Digest::Sha256, "", GOGS)],
    }
}

/// Checks that `body` with `headers` was sent by `provider`, with `secrets` read from the Secret
/// named `secret_name`: the first of the provider's proofs present in the headers decides.
///
/// # Errors
/// No secret for the provider, no proof in the headers, or a proof that does not match.
pub fn verify(
    provider: Provider,
    headers: &HeaderMap,
    body: &[u8],
    secrets: &WebhookSecrets,
    secret_name: &str,
) -> Result<(), SignatureError> {
    let name = provider.name();
    let proofs = proofs(provider, secrets);
    let Some(secret) = secrets.get(proofs[0].key) else {
        return Err(SignatureError::NoSecret {
            provider: name,
            key: proofs[0].key,
            secret: secret_name.to_owned(),
        });
    };
    let Some((proof, value)) = proofs
        .iter()
        .find_map(|proof| Some((proof, headers.get(proof.header)?)))
    else {
        return Err(SignatureError::Unsigned {
            provider: name,
            header: proofs[0].header,
        });
    };
    let mismatch = SignatureError::Mismatch {
        provider: name,
        header: proof.header,
    };
    match proof.kind {
        ProofKind::Token => {
            if bool::from(value.as_bytes().ct_eq(secret)) {
                Ok(())
            } else {
                Err(mismatch)
            }
        }
        ProofKind::Hmac(digest, prefix) => {
            let malformed = SignatureError::Malformed {
                provider: name,
                header: proof.header,
                expected: if prefix.is_empty() {
                    "a hexadecimal HMAC"
                } else {
                    "<digest>=<hexadecimal HMAC>"
                },
            };
            let signature = value
                .to_str()
                .ok()
                .and_then(|value| value.trim().strip_prefix(prefix))
                .and_then(hex::decode)
                .ok_or(malformed)?;
            let verified = match digest {
                Digest::Sha256 => hmac_sha256(secret, body).verify_slice(&signature),
                Digest::Sha1 => hmac_sha1(secret, body).verify_slice(&signature),
            };
            verified.map_err(|_| mismatch)
        }
    }
}

/// The HMAC-SHA256 of `body` with `secret`, ready to be finalized or verified.
fn hmac_sha256(secret: &[u8], body: &[u8]) -> Hmac<sha2::Sha256> {
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret).expect("HMAC takes any key");
    mac.update(body);
    mac
}

/// The HMAC-SHA1 of `body` with `secret` (GitHub's older signature).
fn hmac_sha1(secret: &[u8], body: &[u8]) -> Hmac<sha1::Sha1> {
    let mut mac = Hmac::<sha1::Sha1>::new_from_slice(secret).expect("HMAC takes any key");
    mac.update(body);
    mac
}

/// `<prefix><hex of the HMAC-SHA256 of body with secret>`, as the hosts sign (tests and the
/// documentation's examples sign payloads with it).
#[must_use]
pub fn sign_sha256(secret: &[u8], body: &[u8], prefix: &str) -> String {
    let digest = hmac_sha256(secret, body).finalize().into_bytes();
    format!("{prefix}{}", hex::encode(&digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &[u8] = br#"{"ref":"refs/heads/main"}"#;

    fn secrets(entries: &[(&str, &str)]) -> WebhookSecrets {
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.as_bytes().to_vec()))
            .collect()
    }

    fn headers(entries: &[(&'static str, String)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in entries {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    fn check(
        provider: Provider,
        given: &[(&'static str, String)],
        keys: &[(&str, &str)],
    ) -> Result<(), SignatureError> {
        verify(
            provider,
            &headers(given),
            BODY,
            &secrets(keys),
            "argocd-secret",
        )
    }

    #[test]
    fn github_signs_with_sha256_or_the_older_sha1() {
        let keys = [("webhook.github.secret", "s3cret")];
        let sha256 = sign_sha256(b"s3cret", BODY, "sha256=");
        assert_eq!(
            check(Provider::GitHub, &[("x-hub-signature-256", sha256)], &keys),
            Ok(())
        );
        let sha1 = hmac_sha1(b"s3cret", BODY).finalize().into_bytes();
        let hex: String = sha1.iter().map(|b| format!("{b:02x}")).collect();
        let given = [("x-hub-signature", format!("sha1={hex}"))];
        assert_eq!(check(Provider::GitHub, &given, &keys), Ok(()));
        let wrong = sign_sha256(b"other", BODY, "sha256=");
        assert_eq!(
            check(Provider::GitHub, &[("x-hub-signature-256", wrong)], &keys),
            Err(SignatureError::Mismatch {
                provider: "github",
                header: "x-hub-signature-256"
            })
        );
        assert_eq!(
            check(Provider::GitHub, &[], &keys),
            Err(SignatureError::Unsigned {
                provider: "github",
                header: "x-hub-signature-256"
            })
        );
        assert!(matches!(
            check(
                Provider::GitHub,
                &[("x-hub-signature-256", "sha256=zz".into())],
                &keys
            ),
            Err(SignatureError::Malformed { .. })
        ));
    }

    #[test]
    fn the_documented_examples_verify() {
        // GitHub's "Validating webhook deliveries" example.
        let secret = [("webhook.github.secret", "It's a Secret to Everybody")];
        let header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        let given = headers(&[("x-hub-signature-256", header.to_owned())]);
        assert_eq!(
            verify(
                Provider::GitHub,
                &given,
                b"Hello, World!",
                &secrets(&secret),
                "s"
            ),
            Ok(())
        );
        // RFC 2202's HMAC-SHA1 test case 2.
        let secret = [("webhook.github.secret", "Jefe")];
        let header = "sha1=effcdf6ae5eb2fa2d27416d5f184df9c259a7c79";
        let given = headers(&[("x-hub-signature", header.to_owned())]);
        let body = b"what do ya want for nothing?";
        assert_eq!(
            verify(Provider::GitHub, &given, body, &secrets(&secret), "s"),
            Ok(())
        );
    }

    #[test]
    fn tokens_and_uuids_must_equal_the_secret() {
        let keys = [
            ("webhook.gitlab.secret", "tok"),
            ("webhook.bitbucket.uuid", "{abc}"),
        ];
        assert_eq!(
            check(Provider::GitLab, &[("x-gitlab-token", "tok".into())], &keys),
            Ok(())
        );
        assert!(check(Provider::GitLab, &[("x-gitlab-token", "to".into())], &keys).is_err());
        assert_eq!(
            check(
                Provider::Bitbucket,
                &[("x-hook-uuid", "{abc}".into())],
                &keys
            ),
            Ok(())
        );
        assert!(
            check(
                Provider::Bitbucket,
                &[("x-hook-uuid", "{abd}".into())],
                &keys
            )
            .is_err()
        );
    }

    #[test]
    fn bitbucket_cloud_with_a_secret_and_server_sign_x_hub_signature() {
        let keys = [
            ("webhook.bitbucket.secret", "b"),
            ("webhook.bitbucketserver.secret", "s"),
        ];
        let cloud = sign_sha256(b"b", BODY, "sha256=");
        assert_eq!(
            check(
                Provider::Bitbucket,
                &[("x-hub-signature", cloud.clone())],
                &keys
            ),
            Ok(())
        );
        assert!(
            check(
                Provider::BitbucketServer,
                &[("x-hub-signature", cloud)],
                &keys
            )
            .is_err()
        );
        let server = sign_sha256(b"s", BODY, "sha256=");
        assert_eq!(
            check(
                Provider::BitbucketServer,
                &[("x-hub-signature", server)],
                &keys
            ),
            Ok(())
        );
    }

    #[test]
    fn gitea_and_gogs_send_bare_hex_and_gitea_falls_back_to_the_gogs_secret() {
        let keys = [("webhook.gogs.secret", "g")];
        let hex = sign_sha256(b"g", BODY, "");
        assert_eq!(
            check(Provider::Gogs, &[("x-gogs-signature", hex.clone())], &keys),
            Ok(())
        );
        assert_eq!(
            check(
                Provider::Gitea,
                &[("x-gitea-signature", hex.clone())],
                &keys
            ),
            Ok(())
        );
        assert_eq!(
            check(
                Provider::Gitea,
                &[("x-forgejo-signature", hex.clone())],
                &keys
            ),
            Ok(())
        );
        let own = [("webhook.gogs.secret", "g"), ("webhook.gitea.secret", "t")];
        assert!(check(Provider::Gitea, &[("x-gitea-signature", hex)], &own).is_err());
    }

    #[test]
    fn a_provider_without_a_secret_is_refused() {
        assert_eq!(
            check(
                Provider::GitLab,
                &[("x-gitlab-token", "anything".into())],
                &[]
            ),
            Err(SignatureError::NoSecret {
                provider: "gitlab",
                key: "webhook.gitlab.secret",
                secret: "argocd-secret".into()
            })
        );
    }
}
