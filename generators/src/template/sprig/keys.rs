//! Private keys as sprig makes and reads them. `genPrivateKey` makes RSA 4096, ECDSA P-256,
//! Ed25519 and DSA (L2048N256) keys and writes each in the PEM form sprig gives it: `RSA PRIVATE
//! KEY` (PKCS#1), `EC PRIVATE KEY` (SEC1, naming its curve, with its public key), `PRIVATE KEY`
//! (PKCS#8 v1, the seed only) and `DSA PRIVATE KEY` (version, p, q, g, y, x); the certificate
//! functions write their keys the same way. A key given to a `…WithKey` function may be any of
//! these but DSA (or a PKCS#8 RSA or ECDSA key), as sprig reads them; a DSA key cannot sign a
//! certificate (in sprig neither).

use rcgen::{KeyPair, RsaKeySize, SignatureAlgorithm};
use yasna::models::ObjectIdentifier;
use yasna::{ASN1Error, Tag};

/// The PEM label of every DSA key.
const DSA_LABEL: &str = "DSA PRIVATE KEY";
/// Ed25519's algorithm identifier (RFC 8410).
const ED25519_OID: &[u64] = &[1, 3, 101, 112];
/// The named curves of ECDSA keys: secp256r1, secp384r1, secp521r1.
const P256_OID: &[u64] = &[1, 2, 840, 10045, 3, 1, 7];
const P384_OID: &[u64] = &[1, 3, 132, 0, 34];
const P521_OID: &[u64] = &[1, 3, 132, 0, 35];

/// Why a key could not be made, written or read.
#[derive(Debug, thiserror::Error)]
pub(super) enum KeyError {
    #[error(
        "DSA keys cannot sign certificates (sprig refuses them too); use an RSA, ECDSA or Ed25519 key"
    )]
    DsaCannotSign,
    #[error("could not generate the key: {0}")]
    Generate(#[source] rcgen::Error),
    #[error("no PEM data in input")]
    NoPem,
    #[error("no private key data in PEM block of type {0}")]
    NotPrivateKey(String),
    #[error("invalid private key type {0}")]
    UnknownLabel(String),
    #[error("parsing {label} from PEM: {source}")]
    Parse {
        label: String,
        #[source]
        source: rcgen::Error,
    },
    #[error("malformed key structure: {0}")]
    Der(#[source] ASN1Error),
}

/// `genPrivateKey`: a new key of type `kind` (`""` is RSA, as in sprig) in sprig's PEM form;
/// `None` for a type sprig does not know.
pub(super) fn generate_pem(kind: &str) -> Option<Result<String, KeyError>> {
    let algorithm: &'static SignatureAlgorithm = match kind {
        "" | "rsa" => return Some(generate_rsa(RsaKeySize::_4096).and_then(|key| to_pem(&key))),
        "ecdsa" => &rcgen::PKCS_ECDSA_P256_SHA256,
        "ed25519" => &rcgen::PKCS_ED25519,
        "dsa" => return Some(Ok(generate_dsa())),
        _ => return None,
    };
    Some(
        KeyPair::generate_for(algorithm)
            .map_err(KeyError::Generate)
            .and_then(|key| to_pem(&key)),
    )
}

/// A DSA key with new L2048N256 parameters, in sprig's `DSAKeyFormat`: the version (0), p, q,
/// g, the public y and the private x.
fn generate_dsa() -> String {
    let mut rng = rand_core::OsRng;
    let components = dsa::Components::generate(&mut rng, dsa::KeySize::DSA_2048_256);
    let key = dsa::SigningKey::generate(&mut rng, components);
    let public = key.verifying_key();
    let parameters = public.components();
    let der = yasna::construct_der(|writer| {
        writer.write_sequence(|writer| {
            writer.next().write_u8(0);
            for number in [
                parameters.p(),
                parameters.q(),
                parameters.g(),
                public.y(),
                key.x(),
            ] {
                writer
                    .next()
                    .write_bigint_bytes(&number.to_bytes_be(), true);
            }
        });
    });
    pem_text(DSA_LABEL, der)
}

/// An RSA key of `size` (the certificate functions' own keys are RSA 2048, as in sprig).
pub(super) fn generate_rsa(size: RsaKeySize) -> Result<KeyPair, KeyError> {
    KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, size).map_err(KeyError::Generate)
}

/// Reads a PEM private key as sprig's `parsePrivateKeyPEM` does: the first PEM block, whose type
/// must be `PRIVATE KEY` (PKCS#8), `RSA PRIVATE KEY` (PKCS#1) or `EC PRIVATE KEY` (SEC1).
pub(super) fn from_pem(text: &str) -> Result<KeyPair, KeyError> {
    let block = pem::parse(text).map_err(|_| KeyError::NoPem)?;
    let label = block.tag();
    match label {
        "PRIVATE KEY" | "RSA PRIVATE KEY" | "EC PRIVATE KEY" => KeyPair::try_from(block.contents())
            .map_err(|source| KeyError::Parse {
                label: label.to_string(),
                source,
            }),
        DSA_LABEL => Err(KeyError::DsaCannotSign),
        other if other.ends_with(" PRIVATE KEY") => Err(KeyError::UnknownLabel(other.into())),
        other => Err(KeyError::NotPrivateKey(other.into())),
    }
}

/// Checks a PEM private key as `buildCustomCert` does: what [`from_pem`] reads, or a DSA key
/// (which sprig reads but cannot sign with): the six integers of OpenSSL's DSA key structure.
pub(super) fn check_pem(text: &str) -> Result<(), KeyError> {
    match pem::parse(text) {
        Ok(block) if block.tag() == DSA_LABEL => yasna::parse_der(block.contents(), |reader| {
            reader.read_sequence(|reader| {
                for _ in 0..6 {
                    reader.next().read_bigint_bytes()?;
                }
                Ok(())
            })
        })
        .map_err(KeyError::Der),
        _ => from_pem(text).map(drop),
    }
}

/// `key` in sprig's PEM form (Go's `pemBlockForKey`).
pub(super) fn to_pem(key: &KeyPair) -> Result<String, KeyError> {
    let inner = pkcs8_private_key(key.serialized_der())
        .map_err(KeyError::Der)?
        .unwrap_or_else(|| key.serialized_der().to_vec());
    let algorithm = key.algorithm();
    let (label, der) = if algorithm == &rcgen::PKCS_ED25519 {
        ("PRIVATE KEY", pkcs8_v1(ED25519_OID, &inner))
    } else if let Some(curve) = curve_of(algorithm) {
        (
            "EC PRIVATE KEY",
            sec1_naming(curve, &inner).map_err(KeyError::Der)?,
        )
    } else {
        ("RSA PRIVATE KEY", inner)
    };
    Ok(pem_text(label, der))
}

/// PEM as Go's `encoding/pem` writes it: 64-column lines, `\n` line ends.
pub(super) fn pem_text(label: &str, der: Vec<u8>) -> String {
    let config = pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF);
    pem::encode_config(&pem::Pem::new(label, der), config)
}

/// The named curve of an ECDSA key's algorithm.
fn curve_of(algorithm: &SignatureAlgorithm) -> Option<&'static [u64]> {
    if algorithm == &rcgen::PKCS_ECDSA_P256_SHA256 {
        Some(P256_OID)
    } else if algorithm == &rcgen::PKCS_ECDSA_P384_SHA384 {
        Some(P384_OID)
    } else if algorithm == &rcgen::PKCS_ECDSA_P521_SHA512 {
        Some(P521_OID)
    } else {
        None
    }
}

/// The `privateKey` of a PKCS#8 structure (for RSA a PKCS#1 key, for ECDSA a SEC1 key, for
/// Ed25519 the seed as an OCTET STRING); `None` when `der` is not PKCS#8 (PKCS#1 and SEC1 keys
/// have an INTEGER or OCTET STRING where PKCS#8 has its algorithm's SEQUENCE).
fn pkcs8_private_key(der: &[u8]) -> Result<Option<Vec<u8>>, ASN1Error> {
    let elements = yasna::parse_der(der, |reader| {
        reader.read_sequence(|reader| {
            let mut elements = Vec::new();
            while let Some(element) = reader.read_optional(|reader| reader.read_der())? {
                elements.push(element);
            }
            Ok(elements)
        })
    })?;
    let is_pkcs8 = elements
        .get(1)
        .is_some_and(|algorithm| algorithm.first() == Some(&0x30));
    match elements.get(2) {
        Some(private_key) if is_pkcs8 => {
            yasna::parse_der(private_key, |reader| reader.read_bytes()).map(Some)
        }
        _ => Ok(None),
    }
}

/// A PKCS#8 v1 structure (no public key) of `private_key`, as Go's `MarshalPKCS8PrivateKey`.
fn pkcs8_v1(algorithm: &[u64], private_key: &[u8]) -> Vec<u8> {
    yasna::construct_der(|writer| {
        writer.write_sequence(|writer| {
            writer.next().write_u8(0);
            writer.next().write_sequence(|writer| {
                writer
                    .next()
                    .write_oid(&ObjectIdentifier::from_slice(algorithm));
            });
            writer.next().write_bytes(private_key);
        });
    })
}

/// A SEC1 `ECPrivateKey` naming `curve` in its parameters, as Go's `MarshalECPrivateKey`
/// writes it (PKCS#8 wrappers leave the curve to their algorithm identifier).
fn sec1_naming(curve: &[u64], sec1: &[u8]) -> Result<Vec<u8>, ASN1Error> {
    let (private_key, public_key) = yasna::parse_der(sec1, |reader| {
        reader.read_sequence(|reader| {
            reader.next().read_u8()?;
            let private_key = reader.next().read_bytes()?;
            reader.read_optional(|reader| reader.read_tagged(Tag::context(0), |r| r.read_der()))?;
            let public_key = reader.read_optional(|reader| {
                reader.read_tagged(Tag::context(1), |reader| reader.read_bitvec_bytes())
            })?;
            Ok((private_key, public_key))
        })
    })?;
    Ok(yasna::construct_der(|writer| {
        writer.write_sequence(|writer| {
            writer.next().write_u8(1);
            writer.next().write_bytes(&private_key);
            writer.next().write_tagged(Tag::context(0), |writer| {
                writer.write_oid(&ObjectIdentifier::from_slice(curve));
            });
            if let Some((bits, length)) = &public_key {
                writer.next().write_tagged(Tag::context(1), |writer| {
                    writer.write_bitvec_bytes(bits, *length);
                });
            }
        });
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The PEM label and DER of `text`, and the key read back.
    fn read_back(text: &str) -> (String, Vec<u8>, KeyPair) {
        let block = pem::parse(text).expect("PEM");
        let der = block.contents().to_vec();
        (
            block.tag().to_string(),
            der,
            from_pem(text).expect("reads back"),
        )
    }

    #[test]
    fn keys_are_written_as_go_writes_them_and_read_back() {
        for (kind, label) in [("ecdsa", "EC PRIVATE KEY"), ("ed25519", "PRIVATE KEY")] {
            let text = generate_pem(kind).expect("known type").expect("generates");
            assert!(
                text.ends_with(&format!("-----END {label}-----\n")),
                "{text}"
            );
            assert!(text.lines().all(|line| line.len() <= 64), "{text}");
            let (read_label, der, key) = read_back(&text);
            assert_eq!(read_label, label);
            if kind == "ecdsa" {
                // SEC1: version 1, the 32-byte scalar, [0] prime256v1, [1] the public point.
                let curve = ObjectIdentifier::from_slice(P256_OID);
                let (version, scalar, named, point) = yasna::parse_der(&der, |reader| {
                    reader.read_sequence(|reader| {
                        let version = reader.next().read_u8()?;
                        let scalar = reader.next().read_bytes()?;
                        let named = reader
                            .next()
                            .read_tagged(Tag::context(0), |r| r.read_oid())?;
                        let point = reader
                            .next()
                            .read_tagged(Tag::context(1), |r| r.read_bitvec_bytes())?;
                        Ok((version, scalar, named, point))
                    })
                })
                .expect("SEC1");
                assert_eq!((version, scalar.len(), named), (1, 32, curve));
                assert_eq!(point.0, key.public_key_raw());
                assert_eq!(key.algorithm(), &rcgen::PKCS_ECDSA_P256_SHA256);
            } else {
                // PKCS#8 v1: version 0, the algorithm, the seed; no public key.
                let (version, seed) = yasna::parse_der(&der, |reader| {
                    reader.read_sequence(|reader| {
                        let version = reader.next().read_u8()?;
                        reader.next().read_der()?;
                        let seed = reader.next().read_bytes()?;
                        Ok((version, seed))
                    })
                })
                .expect("PKCS#8 v1");
                assert_eq!((version, seed.len()), (0, 34));
                assert_eq!(key.algorithm(), &rcgen::PKCS_ED25519);
            }
            // A key in sprig's form is written again unchanged.
            assert_eq!(to_pem(&key).expect("writes"), text, "{kind}");
        }
    }

    #[test]
    fn dsa_keys_are_l2048n256_in_sprigs_structure() {
        use dsa::BigUint;
        let text = generate_pem("dsa").expect("known type").expect("generates");
        let block = pem::parse(&text).expect("PEM");
        assert_eq!(block.tag(), DSA_LABEL);
        let (version, numbers) = yasna::parse_der(block.contents(), |reader| {
            reader.read_sequence(|reader| {
                let version = reader.next().read_u8()?;
                let numbers = (0..5)
                    .map(|_| {
                        let (bytes, _) = reader.next().read_bigint_bytes()?;
                        Ok(BigUint::from_bytes_be(&bytes))
                    })
                    .collect::<Result<Vec<_>, ASN1Error>>()?;
                Ok((version, numbers))
            })
        })
        .expect("DSA key structure");
        assert_eq!(version, 0);
        let [p, q, g, y, x] = numbers.as_slice() else {
            panic!("five numbers")
        };
        assert_eq!((p.bits(), q.bits()), (2048, 256), "L2048N256");
        let one = BigUint::from(1u8);
        assert_eq!((p - &one) % q, BigUint::from(0u8), "q divides p - 1");
        assert_eq!(g.modpow(q, p), one, "g generates the subgroup of order q");
        assert!(*x > BigUint::from(0u8) && x < q, "0 < x < q");
        assert_eq!(&g.modpow(x, p), y, "y = g^x mod p");
        // Read as sprig reads it: a key buildCustomCert accepts, not one that signs.
        check_pem(&text).expect("a DSA key structure");
        assert!(matches!(from_pem(&text), Err(KeyError::DsaCannotSign)));
    }

    #[test]
    fn rsa_keys_are_pkcs1_of_their_size() {
        let key = generate_rsa(RsaKeySize::_2048).expect("generates");
        let text = to_pem(&key).expect("writes");
        let (label, der, again) = read_back(&text);
        assert_eq!(label, "RSA PRIVATE KEY");
        assert_eq!(again.public_key_raw(), key.public_key_raw());
        // PKCS#1: version 0, then the modulus, then the exponents and primes.
        let modulus = yasna::parse_der(&der, |reader| {
            reader.read_sequence(|reader| {
                reader.next().read_u8()?;
                let (modulus, _) = reader.next().read_bigint_bytes()?;
                for _ in 0..7 {
                    reader.next().read_der()?;
                }
                Ok(modulus)
            })
        })
        .expect("PKCS#1");
        let significant = modulus.iter().skip_while(|byte| **byte == 0).count();
        assert_eq!(significant, 256, "a 2048-bit modulus");
        assert_eq!(to_pem(&again).expect("writes"), text);
    }

    #[test]
    fn keys_are_refused_as_sprig_refuses_them() {
        assert!(generate_pem("rsa2").is_none());
        let cases: [(&str, &str); 4] = [
            ("not a key", "no PEM data in input"),
            (
                &pem_text("CERTIFICATE", vec![0x30, 0]),
                "no private key data in PEM block of type CERTIFICATE",
            ),
            (
                &pem_text("OPENSSH PRIVATE KEY", vec![0x30, 0]),
                "invalid private key type OPENSSH PRIVATE KEY",
            ),
            (
                &pem_text("EC PRIVATE KEY", vec![0x30, 0]),
                "parsing EC PRIVATE KEY from PEM",
            ),
        ];
        for (text, expected) in cases {
            let error = from_pem(text).expect_err(text).to_string();
            assert!(error.contains(expected), "{text}: {error}");
        }
        assert!(check_pem(&pem_text(DSA_LABEL, vec![0x30, 0])).is_err());
    }
}
