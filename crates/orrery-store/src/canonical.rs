//! Canonical JSON (object keys sorted at every level, no whitespace) and sha256 digests, so the
//! same arguments always hash the same whatever order a caller built them in.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::StoreError;

pub fn sha256_hex(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(64);
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// The canonical text of any serializable value.
pub fn canonical_json<T: Serialize + ?Sized>(value: &T) -> Result<String, StoreError> {
    let value = serde_json::to_value(value).map_err(|e| StoreError::invalid(format!("arguments are not JSON: {e}")))?;
    Ok(sorted(value).to_string())
}

fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}
