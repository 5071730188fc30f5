//! sprig's cryptographic functions that hash, derive or encrypt: `bcrypt` and `htpasswd` (bcrypt
//! at Go's default cost, `$2a$`; or `{SHA}` with `"sha"`), `derivePassword` (the Master Password
//! algorithm: scrypt, then HMAC-SHA256 picking from its character templates), and
//! `encryptAES`/`decryptAES` (AES-256-CBC, PKCS#7 padding, a random IV before the ciphertext,
//! base64). Key and certificate generation is in [`super::certs`].

use aes::cipher::block_padding::Pkcs7;
use aes::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use base64::Engine as _;
use hmac::Mac as _;
use minijinja::value::{Rest, Value};
use minijinja::{Environment, Error};
use sha1::Digest as _;

use super::{fail, int_arg, string_arg};

/// Go's `bcrypt.DefaultCost`.
const BCRYPT_COST: u32 = 10;
const MASTER_PASSWORD_SEED: &str = "com.lyndir.masterpassword";
const AES_BLOCK: usize = 16;

/// `encryptAES` or `decryptAES`: the password and the text to the result.
type Cipher = fn(&str, &str) -> Result<String, String>;

/// The Master Password templates of each password type.
const PASSWORD_TEMPLATES: &[(&str, &[&str])] = &[
    ("maximum", &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"]),
    (
        "long",
        &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
    ),
    ("medium", &["CvcnoCvc", "CvcCvcno"]),
    ("short", &["Cvcn"]),
    ("basic", &["aaanaaan", "aannaaan", "aaannaaa"]),
    ("pin", &["nnnn"]),
];

/// The characters each template letter picks from.
fn template_characters(letter: u8) -> &'static str {
    match letter {
        b'V' => "AEIOU",
        b'C' => "BCDFGHJKLMNPQRSTVWXYZ",
        b'v' => "aeiou",
        b'c' => "bcdfghjklmnpqrstvwxyz",
        b'A' => "AEIOUBCDFGHJKLMNPQRSTVWXYZ",
        b'a' => "AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
        b'n' => "0123456789",
        b'o' => "@&%?,=[]_:-+*$#!'^~;()/.",
        _ => "AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
    }
}

fn bcrypt_hash(function: &str, password: &str) -> Result<String, Error> {
    bcrypt::hash_with_result(password, BCRYPT_COST)
        .map(|parts| parts.format_for_version(bcrypt::Version::TwoA))
        .map_err(|error| fail(function, error))
}

/// The Master Password algorithm, as sprig's `derivePassword` runs it.
fn derive_password(
    counter: u32,
    kind: &str,
    password: &str,
    user: &str,
    site: &str,
) -> Result<String, String> {
    let templates = PASSWORD_TEMPLATES
        .iter()
        .find(|(name, _)| *name == kind)
        .map(|(_, templates)| *templates)
        .ok_or_else(|| format!("cannot find password template {kind}"))?;
    let length = |text: &str| u32::try_from(text.len()).unwrap_or(u32::MAX).to_be_bytes();
    let mut salt = MASTER_PASSWORD_SEED.as_bytes().to_vec();
    salt.extend(length(user));
    salt.extend(user.as_bytes());
    let params = scrypt::Params::new(15, 8, 2, 64).map_err(|error| error.to_string())?;
    let mut key = [0u8; 64];
    scrypt::scrypt(password.as_bytes(), &salt, &params, &mut key).map_err(|e| e.to_string())?;
    let mut message = MASTER_PASSWORD_SEED.as_bytes().to_vec();
    message.extend(length(site));
    message.extend(site.as_bytes());
    message.extend(counter.to_be_bytes());
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).map_err(|e| e.to_string())?;
    mac.update(&message);
    let seed = mac.finalize().into_bytes();
    let template = templates[usize::from(seed[0]) % templates.len()];
    Ok(template
        .bytes()
        .enumerate()
        .map(|(i, letter)| {
            let characters = template_characters(letter).as_bytes();
            char::from(characters[usize::from(seed[i + 1]) % characters.len()])
        })
        .collect())
}

/// sprig's AES key: the password's bytes, cut or zero-filled to 32.
fn aes_key(password: &str) -> [u8; 32] {
    let mut key = [0u8; 32];
    let bytes = password.as_bytes();
    let used = bytes.len().min(32);
    key[..used].copy_from_slice(&bytes[..used]);
    key
}

fn encrypt_aes(password: &str, plaintext: &str) -> Result<String, String> {
    if plaintext.is_empty() {
        return Ok(String::new());
    }
    let mut iv = [0u8; AES_BLOCK];
    getrandom::fill(&mut iv).map_err(|error| format!("no random source: {error}"))?;
    let ciphertext = cbc::Encryptor::<aes::Aes256>::new(&aes_key(password).into(), &iv.into())
        .encrypt_padded_vec_mut::<Pkcs7>(plaintext.as_bytes());
    let mut out = iv.to_vec();
    out.extend(ciphertext);
    Ok(base64::engine::general_purpose::STANDARD.encode(out))
}

fn decrypt_aes(password: &str, encoded: &str) -> Result<String, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|error| error.to_string())?;
    if bytes.len() < AES_BLOCK {
        return Err("ciphertext too short".into());
    }
    let (iv, ciphertext) = bytes.split_at(AES_BLOCK);
    let iv: [u8; AES_BLOCK] = iv.try_into().map_err(|_| "ciphertext too short")?;
    let plaintext = cbc::Decryptor::<aes::Aes256>::new(&aes_key(password).into(), &iv.into())
        .decrypt_padded_vec_mut::<Pkcs7>(ciphertext)
        .map_err(|_| "wrong password or corrupt ciphertext (bad padding)".to_string())?;
    String::from_utf8(plaintext).map_err(|_| "the decrypted bytes are not UTF-8".into())
}

pub(super) fn register(env: &mut Environment<'static>) {
    env.add_function("bcrypt", |password: Value| {
        Ok::<_, Error>(Value::from(bcrypt_hash(
            "bcrypt",
            &string_arg("bcrypt", &password)?,
        )?))
    });
    env.add_function(
        "htpasswd",
        |user: Value, password: Value, algorithm: Rest<Value>| {
            let user = string_arg("htpasswd", &user)?;
            let password = string_arg("htpasswd", &password)?;
            if user.contains(':') {
                return Ok(Value::from(format!("invalid username: {user}")));
            }
            let sha = algorithm.first().and_then(Value::as_str) == Some("sha");
            let hash = if sha {
                let digest = sha1::Sha1::digest(password.as_bytes());
                format!(
                    "{{SHA}}{}",
                    base64::engine::general_purpose::STANDARD.encode(digest)
                )
            } else {
                bcrypt_hash("htpasswd", &password)?
            };
            Ok::<_, Error>(Value::from(format!("{user}:{hash}")))
        },
    );
    env.add_function("derivePassword", |args: Rest<Value>| {
        let [counter, kind, password, user, site] = args.as_slice() else {
            return Err(fail(
                "derivePassword",
                "needs a counter, a password type, a password, a user and a site",
            ));
        };
        let counter = u32::try_from(int_arg("derivePassword", counter)?).map_err(|_| {
            fail(
                "derivePassword",
                "the counter must be a 32-bit unsigned number",
            )
        })?;
        let text = |value| string_arg("derivePassword", value);
        derive_password(
            counter,
            &text(kind)?,
            &text(password)?,
            &text(user)?,
            &text(site)?,
        )
        .map(Value::from)
        .map_err(|message| fail("derivePassword", message))
    });
    let ciphers: [(&'static str, Cipher); 2] =
        [("encryptAES", encrypt_aes), ("decryptAES", decrypt_aes)];
    for (name, cipher) in ciphers {
        env.add_function(name, move |password: Value, text: Value| {
            let (password, text) = (string_arg(name, &password)?, string_arg(name, &text)?);
            cipher(&password, &text)
                .map(Value::from)
                .map_err(|message| fail(name, message))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check, check_errors, render};

    #[test]
    fn hashes_derive_and_encrypt_as_sprig() {
        check(&[
            // sprig's documented example; the PIN computed with Python's hashlib.scrypt and hmac.
            (
                "{{ derivePassword 1 \"long\" \"password\" \"user\" \"example.com\" }}",
                "ZedaFaxcZaso9*",
            ),
            (
                "{{ derivePassword 2 \"pin\" \"password\" \"user\" \"example.com\" }}",
                "3882",
            ),
            (
                "{{ htpasswd \"myUser\" \"myPassword\" \"sha\" }}",
                "myUser:{SHA}VBPuJHI7uixaa6LQGWx4s+5GKNE=",
            ),
            (
                "{{ htpasswd \"my:User\" \"x\" }}",
                "invalid username: my:User",
            ),
            ("{{ encryptAES \"secret\" \"\" }}|", "|"),
            (
                "{{ encryptAES \"secretkey\" \"plaintext\" | decryptAES \"secretkey\" }}",
                "plaintext",
            ),
            (
                "{{ decryptAES \"k\" (encryptAES \"k\" \"a much longer text than one block\") }}",
                "a much longer text than one block",
            ),
        ]);
        let hash = render("{{ bcrypt \"myPassword\" }}").unwrap();
        assert!(hash.starts_with("$2a$10$") && hash.len() == 60, "{hash}");
        assert!(bcrypt::verify("myPassword", &hash).unwrap());
        let line = render("{{ htpasswd \"myUser\" \"myPassword\" }}").unwrap();
        assert!(line.starts_with("myUser:$2a$10$"), "{line}");
        check_errors(&[
            (
                "{{ derivePassword 1 \"huge\" \"p\" \"u\" \"s\" }}",
                "derivePassword: cannot find password template huge",
            ),
            (
                "{{ decryptAES \"other\" (encryptAES \"k\" \"text\") }}",
                "decryptAES: wrong password",
            ),
        ]);
    }
}
