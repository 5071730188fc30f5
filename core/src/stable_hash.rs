//! A 64-bit hash that is the same in every process, platform and release (unlike std's
//! `DefaultHasher`): what shards Applications and names the objects Flotilla derives from
//! others (a step's analysis Job).

/// 64-bit FNV-1a of `bytes`, then MurmurHash3's finalizer so that every bit of the input moves
/// every bit of the output: stable across processes, platforms and releases (unlike std's
/// `DefaultHasher`).
#[must_use]
pub fn stable_hash(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    mix(hash)
}

/// MurmurHash3's 64-bit finalizer.
#[must_use]
pub fn mix(mut hash: u64) -> u64 {
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^ (hash >> 33)
}
