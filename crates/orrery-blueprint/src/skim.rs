//! Finding the bytes of a JSON text that matter to its structure (quotes, backslashes,
//! brackets) eight bytes at a time, for the scans that skip what they need not read: the
//! declared id of a file (`declared.rs`) and the places of diagnostics (`span.rs`); and the
//! brackets and commas outside strings sixty-four bytes at a time ([`Structure`]), for the
//! loader's skip to the middle of a long list of tasks (`typed_load.rs`).

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

/// The places of the brackets and commas of a JSON text outside its strings, from a place
/// outside any string, in order. A block of 64 bytes is read at once: the quotes, brackets and
/// commas each become a mask (a bit a byte), and the bytes within strings are those after an
/// odd number of quotes, the masks' prefix XOR. A block with a backslash (an escape may hide a
/// quote) is read a byte at a time instead.
pub(crate) struct Structure<'a> {
    bytes: &'a [u8],
    /// Where the block being read begins.
    base: usize,
    /// The places in it not given yet, a bit each.
    bits: u64,
    in_string: bool,
    escaped: bool,
}

impl<'a> Structure<'a> {
    pub(crate) fn new(bytes: &'a [u8], from: usize) -> Structure<'a> {
        let mut s = Structure { bytes, base: from, bits: 0, in_string: false, escaped: false };
        s.bits = s.block();
        s
    }

    fn block(&mut self) -> u64 {
        let rest = self.bytes.get(self.base..).unwrap_or_default();
        let mut block = [b' '; 64];
        let n = rest.len().min(64);
        block[..n].copy_from_slice(&rest[..n]);
        let [quotes, backslashes, structure] = masks(&block);
        if backslashes != 0 || self.escaped {
            return self.block_bytewise(&block);
        }
        let inside = prefix_xor(quotes) ^ if self.in_string { !0 } else { 0 };
        self.in_string = inside >> 63 != 0;
        structure & !inside
    }

    fn block_bytewise(&mut self, block: &[u8; 64]) -> u64 {
        let mut bits = 0;
        for (i, &b) in block.iter().enumerate() {
            if self.escaped {
                self.escaped = false;
            } else if self.in_string {
                match b {
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
            } else if b == b'"' {
                self.in_string = true;
            } else if is_structure(b) {
                bits |= 1 << i;
            }
        }
        bits
    }
}

impl Iterator for Structure<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        while self.bits == 0 {
            self.base += 64;
            if self.base >= self.bytes.len() {
                return None;
            }
            self.bits = self.block();
        }
        let k = self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        Some(self.base + k)
    }
}

fn is_structure(b: u8) -> bool {
    matches!(b, b'{' | b'}' | b'[' | b']' | b',')
}

/// The quotes, backslashes, and brackets and commas of a block, a bit a byte: sixteen bytes a
/// compare with SSE2 (every x86-64 has it).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
fn masks(block: &[u8; 64]) -> [u64; 3] {
    use safe_arch::{bitor_m128i, cmp_eq_mask_i8_m128i, load_unaligned_m128i, move_mask_i8_m128i, set_splat_i8_m128i};
    let mut m = [0u64; 3];
    for (k, chunk) in block.chunks_exact(16).enumerate() {
        let v = load_unaligned_m128i(chunk.try_into().expect("sixteen bytes"));
        // `{` and `[` (0x7B, 0x5B), `}` and `]` (0x7D, 0x5D): one compare each with 0x20 set.
        let folded = bitor_m128i(v, set_splat_i8_m128i(0x20));
        let eq = |v, b: u8| {
            let bits = move_mask_i8_m128i(cmp_eq_mask_i8_m128i(v, set_splat_i8_m128i(b as i8)));
            u64::from(bits as u16) << (16 * k)
        };
        m[0] |= eq(v, b'"');
        m[1] |= eq(v, b'\\');
        m[2] |= eq(folded, b'{') | eq(folded, b'}') | eq(v, b',');
    }
    m
}

/// The same, a byte at a time, where SSE2 is not at hand.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn masks(block: &[u8; 64]) -> [u64; 3] {
    let mut m = [0u64; 3];
    for (i, &b) in block.iter().enumerate() {
        m[0] |= u64::from(b == b'"') << i;
        m[1] |= u64::from(b == b'\\') << i;
        m[2] |= u64::from(is_structure(b)) << i;
    }
    m
}

/// Each bit the XOR of itself and all below it: set from a quote up to the next one.
fn prefix_xor(mut x: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        x ^= x << shift;
    }
    x
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The brackets and commas outside strings, a byte at a time.
    fn structure_bytewise(text: &str) -> Vec<usize> {
        let (mut in_string, mut escaped, mut found) = (false, false, Vec::new());
        for (i, b) in text.bytes().enumerate() {
            match (in_string, escaped, b) {
                (true, true, _) => escaped = false,
                (true, false, b'\\') => escaped = true,
                (true, false, b'"') | (false, _, b'"') => in_string = !in_string,
                (false, _, b) if is_structure(b) => found.push(i),
                _ => {}
            }
        }
        found
    }

    #[test]
    fn escapes_and_quotes_across_a_block_boundary_are_read_as_a_byte_at_a_time() {
        for pad in 50..80 {
            for escape in [r#"\""#, r#"\\""#, r#"\\\""#, r#"\\\\"#] {
                let text = format!(
                    r#"[{{"k": "{}{escape},]{{" , "x"}}, [1, "]"], "{}"]"#,
                    "a".repeat(pad),
                    "\\".repeat(pad % 7)
                );
                let found: Vec<usize> = Structure::new(text.as_bytes(), 0).collect();
                assert_eq!(found, structure_bytewise(&text), "{text}");
            }
            // No backslash: a string's closing quote is the block's last byte, or its first.
            let text = format!(r#"["{}", ",", {{"]": 1}}]"#, "a".repeat(pad));
            let found: Vec<usize> = Structure::new(text.as_bytes(), 0).collect();
            assert_eq!(found, structure_bytewise(&text), "{text}");
        }
    }

    proptest::proptest! {
        #[test]
        fn it_finds_what_reading_a_byte_at_a_time_finds(
            value in crate::span::tests::json_value(),
            pretty in proptest::prelude::any::<bool>(),
        ) {
            let text = if pretty { serde_json::to_string_pretty(&value).unwrap() } else { value.to_string() };
            let found: Vec<usize> = Structure::new(text.as_bytes(), 0).collect();
            proptest::prop_assert_eq!(found, structure_bytewise(&text));
        }
    }
}
