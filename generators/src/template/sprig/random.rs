//! sprig's random functions, from the operating system's random source as sprig's are:
//! `randAlphaNum`, `randAlpha`, `randNumeric`, `randAscii`, `randInt`, `randBytes` (base64),
//! `shuffle` and `uuidv4`. (An ApplicationSet using them changes its Applications on every
//! render, as in Argo CD.)

use base64::Engine as _;
use minijinja::value::Value;
use minijinja::{Environment, Error};

use super::{fail, int_arg, string_arg, usize_arg};

const ALPHA: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const DIGITS: &str = "0123456789";

/// `count` random bytes.
fn random_bytes(function: &str, count: usize) -> Result<Vec<u8>, Error> {
    let mut bytes = vec![0; count];
    getrandom::fill(&mut bytes)
        .map_err(|error| fail(function, format!("no random source: {error}")))?;
    Ok(bytes)
}

/// A random number below `bound` (uniform: biased draws are thrown away).
fn below(function: &str, bound: u64) -> Result<u64, Error> {
    let limit = u64::MAX - u64::MAX % bound;
    loop {
        let bytes = random_bytes(function, 8)?;
        let n = u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8]));
        if n < limit {
            return Ok(n % bound);
        }
    }
}

/// `count` characters drawn from `alphabet`.
fn random_text(function: &str, alphabet: &[char], count: usize) -> Result<String, Error> {
    (0..count)
        .map(|_| {
            let at = below(function, alphabet.len() as u64)?;
            Ok(alphabet[usize::try_from(at).unwrap_or(0)])
        })
        .collect()
}

pub(super) fn register(env: &mut Environment<'static>) {
    let printable: String = (' '..='~').collect();
    let alphabets = [
        ("randAlphaNum", format!("{ALPHA}{DIGITS}")),
        ("randAlpha", ALPHA.to_string()),
        ("randNumeric", DIGITS.to_string()),
        ("randAscii", printable),
    ];
    for (name, alphabet) in alphabets {
        let alphabet: Vec<char> = alphabet.chars().collect();
        env.add_function(name, move |count: Value| {
            Ok::<_, Error>(Value::from(random_text(
                name,
                &alphabet,
                usize_arg(name, &count)?,
            )?))
        });
    }
    env.add_function("randInt", |min: Value, max: Value| {
        let (min, max) = (int_arg("randInt", &min)?, int_arg("randInt", &max)?);
        let span = max
            .checked_sub(min)
            .and_then(|span| u64::try_from(span).ok())
            .filter(|&span| span > 0)
            .ok_or_else(|| fail("randInt", format!("empty range [{min}, {max})")))?;
        let offset = i64::try_from(below("randInt", span)?).unwrap_or(0);
        Ok::<_, Error>(Value::from(min + offset))
    });
    env.add_function("randBytes", |count: Value| {
        let bytes = random_bytes("randBytes", usize_arg("randBytes", &count)?)?;
        Ok::<_, Error>(Value::from(
            base64::engine::general_purpose::STANDARD.encode(bytes),
        ))
    });
    env.add_function("shuffle", |text: Value| {
        let mut chars: Vec<char> = string_arg("shuffle", &text)?.chars().collect();
        for i in (1..chars.len()).rev() {
            let j = below("shuffle", i as u64 + 1)?;
            chars.swap(i, usize::try_from(j).unwrap_or(0));
        }
        Ok::<_, Error>(Value::from(chars.into_iter().collect::<String>()))
    });
    env.add_function("uuidv4", || {
        let mut bytes = random_bytes("uuidv4", 16)?;
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok::<_, Error>(Value::from(format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        )))
    });
}

#[cfg(test)]
mod tests {
    use super::super::test_support::render;

    /// A template, the length of its result and the characters it may hold.
    type Shape = (&'static str, usize, fn(char) -> bool);

    #[test]
    fn random_values_have_sprigs_shape() {
        let alphabets: [Shape; 4] = [
            ("{{ randAlphaNum 12 }}", 12, |c| c.is_ascii_alphanumeric()),
            ("{{ randAlpha 8 }}", 8, |c| c.is_ascii_alphabetic()),
            ("{{ randNumeric 6 }}", 6, |c| c.is_ascii_digit()),
            ("{{ randAscii 20 }}", 20, |c| (' '..='~').contains(&c)),
        ];
        for (template, length, allowed) in alphabets {
            let text = render(template).unwrap();
            assert!(
                text.len() == length && text.chars().all(allowed),
                "{template}: {text}"
            );
        }
        let n: i64 = render("{{ randInt 5 8 }}").unwrap().parse().unwrap();
        assert!((5..8).contains(&n));
        assert_eq!(render("{{ randBytes 3 | len }}").unwrap(), "4");
        let mut shuffled: Vec<char> = render("{{ shuffle \"hello\" }}").unwrap().chars().collect();
        shuffled.sort_unstable();
        assert_eq!(shuffled, ['e', 'h', 'l', 'l', 'o']);
        let uuid = render("{{ uuidv4 }}").unwrap();
        let parts: Vec<&str> = uuid.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(
            parts[2].starts_with('4') && "89ab".contains(&parts[3][..1]),
            "{uuid}"
        );
        assert_ne!(uuid, render("{{ uuidv4 }}").unwrap());
        assert!(
            render("{{ randInt 3 3 }}")
                .unwrap_err()
                .contains("randInt: empty range")
        );
    }
}
