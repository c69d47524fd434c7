//! The blueprint `version`, read as the reference reads it: a PEP 440 version (through
//! `packaging.version.Version`) whose major release number must be 1.

use regex::Regex;
use std::sync::LazyLock;

/// Python's `\s` for str patterns: the characters for which `str.isspace()` holds.
const PY_SPACE: &str =
    r"[\t\n\x0B\x0C\r\x1C-\x1F \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]";

static PEP440: LazyLock<Regex> = LazyLock::new(|| {
    let core = r"(?i-u:v?(?:(?:([0-9]+)!)?([0-9]+(?:\.[0-9]+)*)(?:[._-]?(?:alpha|a|beta|b|preview|pre|c|rc)[._-]?(?:[0-9]+)?)?(?:(?:-(?:[0-9]+))|(?:[._-]?(?:post|rev|r)[._-]?(?:[0-9]+)?))?(?:[._-]?(?:dev)[._-]?(?:[0-9]+)?)?)(?:\+(?:[a-z0-9]+(?:[._-][a-z0-9]+)*))?)";
    Regex::new(&format!("^{PY_SPACE}*{core}{PY_SPACE}*$")).expect("the PEP 440 pattern compiles")
});

/// Why a version is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionProblem {
    /// Not a PEP 440 version at all.
    Invalid,
    /// A version whose major release number is not 1.
    Unsupported { major: String },
}

/// Checks a version string the way the reference's loader does.
pub fn check(version: &str) -> Result<(), VersionProblem> {
    let release = if !version.is_empty() && version.bytes().all(|b| b == b'.' || b.is_ascii_digit()) {
        // The reference's fast path: digits and dots only, every part non-empty.
        if version.split('.').any(str::is_empty) {
            return Err(VersionProblem::Invalid);
        }
        version
    } else {
        let captures = PEP440.captures(version).ok_or(VersionProblem::Invalid)?;
        captures.get(2).map_or("", |m| m.as_str())
    };
    let major = release.split('.').next().unwrap_or("").trim_start_matches('0');
    if major == "1" {
        Ok(())
    } else {
        Err(VersionProblem::Unsupported { major: if major.is_empty() { "0".into() } else { major.into() } })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_packaging_accepts_with_major_one() {
        for v in [
            "1",
            "1.0",
            "v1.0",
            " 1.0 ",
            "01.2",
            "2!1.0",
            "1.0-beta",
            "1.0+local",
            "1.0.post1.dev2",
            "V1",
            "1.0\n",
            "1.0a",
            "\u{a0}1.0",
        ] {
            assert_eq!(check(v), Ok(()), "{v:?} is a version 1");
        }
    }

    #[test]
    fn refuses_what_packaging_refuses() {
        for v in ["abc", "1.", "", "1..0", "\u{661}.0", "1.0 beta"] {
            assert_eq!(check(v), Err(VersionProblem::Invalid), "{v:?} is not PEP 440");
        }
    }

    #[test]
    fn names_the_major_of_other_versions() {
        assert_eq!(check("2.0"), Err(VersionProblem::Unsupported { major: "2".into() }));
        assert_eq!(check("1!2.0"), Err(VersionProblem::Unsupported { major: "2".into() }));
        assert_eq!(check("0.9"), Err(VersionProblem::Unsupported { major: "0".into() }));
    }
}
