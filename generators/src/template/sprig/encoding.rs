//! sprig's encodings and checksums: `b64enc`/`b64dec`, `b32enc`/`b32dec` (standard alphabets,
//! padded), `sha1sum`/`sha256sum`/`sha512sum` (hex) and `adler32sum` (decimal).

use base64::Engine as _;
use minijinja::value::Value;
use minijinja::{Environment, Error};
use sha1::Digest as _;

use super::{fail, string_arg};

const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// Bytes to text, for the functions of one string.
type Encoder = fn(&[u8]) -> String;
/// Text to bytes, `None` when the text is not in the encoding.
type Decoder = fn(&str) -> Option<Vec<u8>>;

pub(super) fn register(env: &mut Environment<'static>) {
    let encoders: [(&'static str, Encoder); 6] = [
        ("b64enc", |bytes| {
            base64::engine::general_purpose::STANDARD.encode(bytes)
        }),
        ("b32enc", base32_encode),
        ("sha1sum", |bytes| hex(&sha1::Sha1::digest(bytes))),
        ("sha256sum", |bytes| hex(&sha2::Sha256::digest(bytes))),
        ("sha512sum", |bytes| hex(&sha2::Sha512::digest(bytes))),
        ("adler32sum", |bytes| adler32(bytes).to_string()),
    ];
    for (name, encode) in encoders {
        env.add_function(name, move |value: Value| {
            Ok::<_, Error>(Value::from(encode(string_arg(name, &value)?.as_bytes())))
        });
    }
    let decoders: [(&'static str, Decoder); 2] = [
        ("b64dec", |text| {
            base64::engine::general_purpose::STANDARD.decode(text).ok()
        }),
        ("b32dec", base32_decode),
    ];
    for (name, decode) in decoders {
        env.add_function(name, move |value: Value| {
            let text = string_arg(name, &value)?;
            let bytes = decode(text.trim())
                .ok_or_else(|| fail(name, format!("illegal data in {text:?}")))?;
            String::from_utf8(bytes)
                .map(Value::from)
                .map_err(|_| fail(name, "the decoded bytes are not UTF-8"))
        });
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Adler-32 (RFC 1950), as Go's `hash/adler32`.
fn adler32(bytes: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in bytes {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    (b << 16) | a
}

/// RFC 4648 base32 with padding.
fn base32_encode(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(5) {
        let mut buffer = [0u8; 5];
        buffer[..chunk.len()].copy_from_slice(chunk);
        let bits = buffer
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        let symbols = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < symbols {
                out.push(BASE32[((bits >> (35 - i * 5)) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base32_decode(text: &str) -> Option<Vec<u8>> {
    let symbols = text.trim_end_matches('=');
    if !text.len().is_multiple_of(8) {
        return None;
    }
    let mut out = Vec::new();
    let (mut bits, mut count) = (0u64, 0);
    for c in symbols.bytes() {
        let value = BASE32.iter().position(|&s| s == c)?;
        bits = (bits << 5) | value as u64;
        count += 5;
        if count >= 8 {
            count -= 8;
            out.push(((bits >> count) & 0xff) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check, check_errors};

    #[test]
    fn encodings_match_go() {
        check(&[
            (
                "{{ b64enc \"hello\" }} {{ b64dec \"aGVsbG8=\" }}",
                "aGVsbG8= hello",
            ),
            (
                "{{ b32enc \"hello\" }} {{ b32dec \"NBSWY3DP\" }} {{ b32enc \"a\" }}",
                "NBSWY3DP hello ME======",
            ),
            (
                "{{ sha1sum \"Hello world!\" }}",
                "d3486ae9136e7856bc42212385ea797094475802",
            ),
            (
                "{{ sha256sum \"Hello world!\" }}",
                "c0535e4be2b79ffd93291305436bf889314e4a3faec05ecffcbb7df31ad9e51a",
            ),
            (
                "{{ sha512sum \"Hello world!\" }}",
                "f6cde2a0f819314cdde55fc227d8d7dae3d28cc556222a0a8ad66d91ccad4aad6094f517a2182360c9aacf6a3dc323162cb6fd8cdffedb0fe038f55e85ffb5b6",
            ),
            ("{{ adler32sum \"Hello world!\" }}", "487130206"),
        ]);
        check_errors(&[("{{ b64dec \"%%\" }}", "b64dec: illegal data")]);
    }
}
