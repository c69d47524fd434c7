//! Finding the bytes of a JSON text that matter to its structure (quotes, backslashes,
//! brackets) eight bytes at a time, for the scans that skip what they need not read: the
//! declared id of a file (`declared.rs`) and the places of diagnostics (`span.rs`).

/// The bytes that end a string's run of plain bytes: its closing quote, a backslash.
pub(crate) const ENDS_STRING: [bool; 256] = table(b"\"\\");
/// Strings (to be skipped whole) and brackets (the depth): all a skip past a value reads.
pub(crate) const MATTERS_BELOW: [bool; 256] = table(b"\"{}[]");

/// The index of the first byte of `bytes` in `set`, eight bytes at a time: `words` marks (in
/// the top bit of each byte) a superset of the bytes of the set in a word, its lowest mark exact
/// for the superset.
pub(crate) fn first(bytes: &[u8], set: &[bool; 256], words: fn(u64) -> u64) -> Option<usize> {
    let mut i = 0;
    while i + 8 <= bytes.len() {
        let word = u64::from_le_bytes(bytes[i..i + 8].try_into().expect("eight bytes"));
        let marks = words(word);
        if marks == 0 {
            i += 8;
            continue;
        }
        let k = i + (marks.trailing_zeros() / 8) as usize;
        if set[bytes[k] as usize] {
            return Some(k);
        }
        i = k + 1;
    }
    bytes[i..].iter().position(|&b| set[b as usize]).map(|k| i + k)
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The top bit of each zero byte of `v` set (and maybe of bytes above the first zero one).
fn zero_bytes(v: u64) -> u64 {
    v.wrapping_sub(ONES) & !v & HIGHS
}

pub(crate) fn ends_string(word: u64) -> u64 {
    zero_bytes(word ^ (ONES * u64::from(b'"'))) | zero_bytes(word ^ (ONES * u64::from(b'\\')))
}

/// `"` and the brackets `[`, `]`, `{`, `}`: the four are the bytes `b & 0xD9 == 0x59` with `Y`, `_`,
/// `y` and DEL (which [`first`] then tells apart).
pub(crate) fn quote_or_bracket(word: u64) -> u64 {
    zero_bytes(word ^ (ONES * u64::from(b'"'))) | zero_bytes((word & (ONES * 0xD9)) ^ (ONES * 0x59))
}

const fn table(bytes: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut k = 0;
    while k < bytes.len() {
        t[bytes[k] as usize] = true;
        k += 1;
    }
    t
}
