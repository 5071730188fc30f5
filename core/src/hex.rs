//! Bytes as lower-case hexadecimal, and back (either case): signatures and signed tokens.

/// `bytes` as lower-case hexadecimal.
#[must_use]
pub fn encode(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The bytes of a hexadecimal string (either case), `None` when it is not one.
#[must_use]
pub fn decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_what_it_writes() {
        assert_eq!(encode(&[0, 0xab, 0x7f]), "00ab7f");
        assert_eq!(decode("00AB7f"), Some(vec![0, 0xab, 0x7f]));
        assert_eq!(decode("abc"), None);
        assert_eq!(decode("zz"), None);
    }
}
