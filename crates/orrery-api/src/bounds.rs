//! Arguments with bounds their JSON Schema states and their reading enforces: a value out of
//! bounds breaks the job's schema, so the call is refused before the job runs (HTTP 422), as
//! a wrong type is.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{de, Deserialize, Deserializer};

/// A string of at least one character.
#[derive(Debug, Clone, PartialEq)]
pub struct NonEmpty(pub String);

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<NonEmpty, D::Error> {
        let s = String::deserialize(d)?;
        if s.is_empty() {
            return Err(de::Error::custom("must not be empty (minLength 1)"));
        }
        Ok(NonEmpty(s))
    }
}

impl JsonSchema for NonEmpty {
    fn schema_name() -> Cow<'static, str> {
        "NonEmptyString".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "minLength": 1})
    }
}

/// A log window's start: a byte offset, or -1 for the tail.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogOffset(pub i64);

impl Default for LogOffset {
    fn default() -> LogOffset {
        LogOffset(-1)
    }
}

impl<'de> Deserialize<'de> for LogOffset {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<LogOffset, D::Error> {
        let n = i64::deserialize(d)?;
        if n < -1 {
            return Err(de::Error::custom(format!("offset {n} is less than the minimum of -1")));
        }
        Ok(LogOffset(n))
    }
}

impl JsonSchema for LogOffset {
    fn schema_name() -> Cow<'static, str> {
        "LogOffset".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "integer", "minimum": -1, "default": -1,
            "description": "The byte offset the window starts at; -1 reads the tail.",
        })
    }
}

/// A log window's size in bytes, `MIN_LIMIT..=MAX_LIMIT` of `orrery_logs`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogLimit(pub u64);

impl Default for LogLimit {
    fn default() -> LogLimit {
        LogLimit(orrery_logs::DEFAULT_LIMIT)
    }
}

impl<'de> Deserialize<'de> for LogLimit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<LogLimit, D::Error> {
        let n = u64::deserialize(d)?;
        if !(orrery_logs::MIN_LIMIT..=orrery_logs::MAX_LIMIT).contains(&n) {
            return Err(de::Error::custom(format!(
                "limit {n} is outside {}..={} bytes",
                orrery_logs::MIN_LIMIT,
                orrery_logs::MAX_LIMIT
            )));
        }
        Ok(LogLimit(n))
    }
}

impl JsonSchema for LogLimit {
    fn schema_name() -> Cow<'static, str> {
        "LogLimit".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "integer",
            "minimum": orrery_logs::MIN_LIMIT,
            "maximum": orrery_logs::MAX_LIMIT,
            "default": orrery_logs::DEFAULT_LIMIT,
            "description": "At most this many bytes (not lines).",
        })
    }
}

/// Seconds between two looks, more than 0. Read as at most [`PollInterval::LONGEST`] (and at
/// least a millisecond), so that no value sleeps forever or overflows a duration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PollInterval(pub f64);

impl PollInterval {
    pub const LONGEST: f64 = 60.0;

    pub fn duration(self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(self.0.clamp(0.001, PollInterval::LONGEST))
    }
}

impl<'de> Deserialize<'de> for PollInterval {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<PollInterval, D::Error> {
        let s = f64::deserialize(d)?;
        if !(s > 0.0) {
            return Err(de::Error::custom(format!("poll_interval {s} is not more than 0 (exclusiveMinimum 0)")));
        }
        Ok(PollInterval(s))
    }
}

impl JsonSchema for PollInterval {
    fn schema_name() -> Cow<'static, str> {
        "PollInterval".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "number", "exclusiveMinimum": 0,
            "description": "Seconds between two looks at the task (read as at most 60).",
        })
    }
}

/// At least one string, none twice.
#[derive(Debug, Clone, PartialEq)]
pub struct UniqueIds(pub Vec<String>);

impl<'de> Deserialize<'de> for UniqueIds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<UniqueIds, D::Error> {
        let ids = Vec::<String>::deserialize(d)?;
        if ids.is_empty() {
            return Err(de::Error::custom("must name at least one id (minItems 1)"));
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = ids.iter().find(|id| !seen.insert(id.as_str())) {
            return Err(de::Error::custom(format!("names {twice:?} twice (uniqueItems)")));
        }
        Ok(UniqueIds(ids))
    }
}

impl JsonSchema for UniqueIds {
    fn schema_name() -> Cow<'static, str> {
        "UniqueIds".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": true})
    }
}

/// A page size of the task memory's events: 1 to `MAX_MEMORY_PAGE` (default 50).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageLimit(pub u32);

impl Default for PageLimit {
    fn default() -> PageLimit {
        PageLimit(50)
    }
}

impl<'de> Deserialize<'de> for PageLimit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<PageLimit, D::Error> {
        let n = u64::deserialize(d)?;
        let most = orrery_store::MAX_MEMORY_PAGE;
        if !(1..=u64::from(most)).contains(&n) {
            return Err(de::Error::custom(format!("limit {n} is outside 1..={most}")));
        }
        Ok(PageLimit(n as u32))
    }
}

impl JsonSchema for PageLimit {
    fn schema_name() -> Cow<'static, str> {
        "PageLimit".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": 1, "maximum": orrery_store::MAX_MEMORY_PAGE, "default": 50})
    }
}
