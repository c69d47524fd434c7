//! The agent protocol's messages as the reference puts them on the wire (docs/format.md §4).
//!
//! Each MQTT payload is a COMPAS envelope, compas_pb's `MessageData {data: AnyData, version}`,
//! whose `data` packs one antikythera message as a `google.protobuf.Any`
//! (`type.googleapis.com/antikythera.v1.TaskAssignmentMessage`, ...). Values (inputs, params,
//! outputs, context) are compas_pb `AnyData`: an explicit int or double, a `google.protobuf.Value`
//! for null, bool and string, a dict or list of `AnyData`. The definitions below are written from
//! the documented field numbers of `antikythera/proto/antikythera.proto` and compas_pb's
//! `message.proto` (antikythera-sdk 0.5.1, compas_pb 1.2).
//!
//! Values map to JSON losslessly both ways for what JSON can hold; a typed COMPAS object (a
//! packed `Any`, a mesh say) becomes `{"$protobuf": type_url, "base64": bytes}` and is packed back
//! as it came, so a value passed through Orrery reaches the next agent unchanged.

use std::collections::BTreeMap;

use prost::Message as _;
use serde_json::{Map, Number, Value};

/// The compas_pb version written in every envelope. Readers compare its wire-compatibility key
/// (the major version from 1.0 on) and refuse a message without one.
pub const COMPAS_PB_VERSION: &str = "1.2.0";
const TYPE_URL_PREFIX: &str = "type.googleapis.com/";

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum WireError {
    #[error("not a COMPAS envelope: {0}")]
    Envelope(String),
    #[error("the envelope was written by compas_pb {0}, whose wire format differs from {COMPAS_PB_VERSION}")]
    Version(String),
    #[error("the envelope holds {0}, not an antikythera message")]
    NotAMessage(String),
    #[error("{field}: {message}")]
    Value { field: String, message: String },
}

// ---- compas_pb.data (message.proto) ----

#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyData {
    #[prost(oneof = "any_data::Data", tags = "1, 2, 3, 4, 5, 6, 7")]
    pub data: Option<any_data::Data>,
}

pub mod any_data {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Data {
        #[prost(message, tag = "1")]
        Message(prost_types::Any),
        #[prost(message, tag = "2")]
        Value(prost_types::Value),
        #[prost(message, tag = "3")]
        Fallback(super::FallbackData),
        #[prost(int64, tag = "4")]
        IntValue(i64),
        #[prost(double, tag = "5")]
        DoubleValue(f64),
        #[prost(message, tag = "6")]
        DictValue(super::DictData),
        #[prost(message, tag = "7")]
        ListValue(super::ListData),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct FallbackData {
    #[prost(message, optional, tag = "1")]
    pub data: Option<DictData>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ListData {
    #[prost(message, repeated, tag = "1")]
    pub items: Vec<AnyData>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DictData {
    #[prost(btree_map = "string, message", tag = "1")]
    pub items: BTreeMap<String, AnyData>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct MessageData {
    #[prost(message, optional, tag = "1")]
    pub data: Option<AnyData>,
    #[prost(string, optional, tag = "2")]
    pub version: Option<String>,
}

// ---- antikythera.v1 (antikythera.proto) ----

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ExecutionMode {
    Exclusive = 0,
    Competitive = 1,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum TaskState {
    Unspecified = 0,
    Pending = 1,
    Ready = 2,
    Running = 3,
    Succeeded = 4,
    Failed = 5,
}

pub type Values = BTreeMap<String, AnyData>;

/// Orchestrator → agents (`antikythera/task/start`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskAssignmentMessage {
    #[prost(string, tag = "1")]
    pub id: String,
    /// The task type, `"{agent type}.{tool}"`.
    #[prost(string, tag = "2")]
    pub task_type: String,
    #[prost(btree_map = "string, message", tag = "3")]
    pub inputs: Values,
    #[prost(string, repeated, tag = "4")]
    pub output_keys: Vec<String>,
    #[prost(btree_map = "string, message", tag = "5")]
    pub params: Values,
    #[prost(message, optional, tag = "6")]
    pub timestamp: Option<prost_types::Timestamp>,
    #[prost(enumeration = "ExecutionMode", tag = "7")]
    pub execution_mode: i32,
    #[prost(btree_map = "string, message", tag = "8")]
    pub context: Values,
}

/// Agent → orchestrator (`antikythera/task/claim`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskClaimRequest {
    #[prost(string, tag = "1")]
    pub task_id: String,
    #[prost(string, tag = "2")]
    pub agent_id: String,
    #[prost(message, optional, tag = "3")]
    pub timestamp: Option<prost_types::Timestamp>,
}

/// Orchestrator → agents (`antikythera/task/allocation`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskAllocationMessage {
    #[prost(string, tag = "1")]
    pub task_id: String,
    #[prost(string, tag = "2")]
    pub assigned_agent_id: String,
    #[prost(message, optional, tag = "3")]
    pub timestamp: Option<prost_types::Timestamp>,
}

/// Agent → orchestrator while it works. The reference defines it but has no topic for it;
/// Orrery's agents send it on [`crate::Topic::Status`] as a heartbeat.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskStatusUpdateMessage {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(enumeration = "TaskState", tag = "2")]
    pub state: i32,
    #[prost(string, tag = "3")]
    pub agent_id: String,
    #[prost(message, optional, tag = "4")]
    pub data: Option<AnyData>,
    #[prost(message, optional, tag = "5")]
    pub timestamp: Option<prost_types::Timestamp>,
}

/// Agent → orchestrator (`antikythera/task/completed`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskCompletionMessage {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(enumeration = "TaskState", tag = "2")]
    pub state: i32,
    #[prost(string, tag = "3")]
    pub agent_id: String,
    #[prost(btree_map = "string, message", tag = "4")]
    pub outputs: Values,
    #[prost(message, optional, tag = "5")]
    pub error: Option<TaskError>,
    #[prost(message, optional, tag = "6")]
    pub timestamp: Option<prost_types::Timestamp>,
    #[prost(uint64, tag = "7")]
    pub duration_ms: u64,
}

/// Orchestrator → agents (`antikythera/task/ack`). An agent still running the task that is
/// not `accepted_agent_id` cancels its run.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskCompletionAckMessage {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(enumeration = "TaskState", tag = "2")]
    pub state: i32,
    #[prost(string, tag = "3")]
    pub accepted_agent_id: String,
    #[prost(message, optional, tag = "4")]
    pub timestamp: Option<prost_types::Timestamp>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskError {
    #[prost(string, tag = "1")]
    pub code: String,
    #[prost(string, tag = "2")]
    pub message: String,
    #[prost(message, optional, tag = "3")]
    pub details: Option<AnyData>,
}

/// One message of the protocol, as carried in an envelope.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    Assignment(TaskAssignmentMessage),
    Claim(TaskClaimRequest),
    Allocation(TaskAllocationMessage),
    Status(TaskStatusUpdateMessage),
    Completion(TaskCompletionMessage),
    Ack(TaskCompletionAckMessage),
}

impl Message {
    fn type_name(&self) -> &'static str {
        match self {
            Message::Assignment(_) => "antikythera.v1.TaskAssignmentMessage",
            Message::Claim(_) => "antikythera.v1.TaskClaimRequest",
            Message::Allocation(_) => "antikythera.v1.TaskAllocationMessage",
            Message::Status(_) => "antikythera.v1.TaskStatusUpdateMessage",
            Message::Completion(_) => "antikythera.v1.TaskCompletionMessage",
            Message::Ack(_) => "antikythera.v1.TaskCompletionAckMessage",
        }
    }

    /// The id of the task (assignment) the message is about.
    pub fn task_id(&self) -> &str {
        match self {
            Message::Assignment(m) => &m.id,
            Message::Claim(m) => &m.task_id,
            Message::Allocation(m) => &m.task_id,
            Message::Status(m) => &m.id,
            Message::Completion(m) => &m.id,
            Message::Ack(m) => &m.id,
        }
    }

    /// The MQTT payload: the message packed in a COMPAS envelope.
    pub fn encode(&self) -> Vec<u8> {
        let value = match self {
            Message::Assignment(m) => m.encode_to_vec(),
            Message::Claim(m) => m.encode_to_vec(),
            Message::Allocation(m) => m.encode_to_vec(),
            Message::Status(m) => m.encode_to_vec(),
            Message::Completion(m) => m.encode_to_vec(),
            Message::Ack(m) => m.encode_to_vec(),
        };
        let any = prost_types::Any { type_url: format!("{TYPE_URL_PREFIX}{}", self.type_name()), value };
        MessageData {
            data: Some(AnyData { data: Some(any_data::Data::Message(any)) }),
            version: Some(COMPAS_PB_VERSION.to_string()),
        }
        .encode_to_vec()
    }

    /// Reads an MQTT payload. A message of another compas_pb wire version, or anything else
    /// than one of the six messages, is an error (never a guess).
    pub fn decode(payload: &[u8]) -> Result<Message, WireError> {
        let envelope = MessageData::decode(payload).map_err(|e| WireError::Envelope(e.to_string()))?;
        match envelope.version.as_deref() {
            None | Some("") => return Err(WireError::Envelope("it carries no compas_pb version".into())),
            Some(v) if wire_key(v) != wire_key(COMPAS_PB_VERSION) => return Err(WireError::Version(v.to_string())),
            Some(_) => {}
        }
        let any = match envelope.data.and_then(|d| d.data) {
            Some(any_data::Data::Message(any)) => any,
            Some(_) => return Err(WireError::NotAMessage("a plain value".into())),
            None => return Err(WireError::Envelope("it holds no data".into())),
        };
        let name = any.type_url.rsplit('/').next().unwrap_or_default();
        let bytes = any.value.as_slice();
        let bad = |e: prost::DecodeError| WireError::Envelope(format!("{name}: {e}"));
        Ok(match name {
            "antikythera.v1.TaskAssignmentMessage" => Message::Assignment(prost::Message::decode(bytes).map_err(bad)?),
            "antikythera.v1.TaskClaimRequest" => Message::Claim(prost::Message::decode(bytes).map_err(bad)?),
            "antikythera.v1.TaskAllocationMessage" => Message::Allocation(prost::Message::decode(bytes).map_err(bad)?),
            "antikythera.v1.TaskStatusUpdateMessage" => Message::Status(prost::Message::decode(bytes).map_err(bad)?),
            "antikythera.v1.TaskCompletionMessage" => Message::Completion(prost::Message::decode(bytes).map_err(bad)?),
            "antikythera.v1.TaskCompletionAckMessage" => Message::Ack(prost::Message::decode(bytes).map_err(bad)?),
            _ => return Err(WireError::NotAMessage(any.type_url)),
        })
    }
}

/// compas_pb's wire-compatibility key: `MAJOR.MINOR` under 1.0, `MAJOR` from 1.0 on.
fn wire_key(version: &str) -> String {
    let mut parts = version.split('.');
    let major = parts.next().unwrap_or_default();
    match (major, parts.next()) {
        ("0", Some(minor)) => format!("0.{minor}"),
        _ => major.to_string(),
    }
}

/// Now, as the messages' optional timestamps carry it.
pub fn now() -> prost_types::Timestamp {
    prost_types::Timestamp::from(std::time::SystemTime::now())
}

// ---- values ----

/// The key under which a packed COMPAS object travels through JSON, beside `base64`.
pub const PACKED: &str = "$protobuf";

/// A JSON value as compas_pb writes the same Python value: an integer as `int_value`, any
/// other number as `double_value` (so `1.0` stays a float), null, bool and string as a
/// `google.protobuf.Value`, arrays and objects as list and dict.
pub fn to_any(value: &Value) -> AnyData {
    use any_data::Data;
    use prost_types::value::Kind;
    let plain = |kind| Data::Value(prost_types::Value { kind: Some(kind) });
    let data = match value {
        Value::Null => plain(Kind::NullValue(0)),
        Value::Bool(b) => plain(Kind::BoolValue(*b)),
        Value::String(s) => plain(Kind::StringValue(s.clone())),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Data::IntValue(i),
            None => Data::DoubleValue(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::Array(items) => Data::ListValue(ListData { items: items.iter().map(to_any).collect() }),
        Value::Object(map) => match packed(map) {
            Some(any) => Data::Message(any),
            None => Data::DictValue(DictData { items: to_values(map) }),
        },
    };
    AnyData { data: Some(data) }
}

/// A map of named values, as assignments and completions carry them.
pub fn to_values(map: &Map<String, Value>) -> Values {
    map.iter().map(|(k, v)| (k.clone(), to_any(v))).collect()
}

/// Reads a value. `field` names where it was found, for the error.
pub fn from_any(any: &AnyData, field: &str) -> Result<Value, WireError> {
    use any_data::Data;
    let error = |message: &str| WireError::Value { field: field.to_string(), message: message.to_string() };
    Ok(match &any.data {
        None => Value::Null,
        Some(Data::Value(v)) => from_value(v, field)?,
        Some(Data::IntValue(i)) => Value::from(*i),
        Some(Data::DoubleValue(d)) => Value::Number(Number::from_f64(*d).ok_or_else(|| error("not a finite number"))?),
        Some(Data::DictValue(dict)) => Value::Object(from_values(&dict.items, field)?),
        Some(Data::Fallback(f)) => match &f.data {
            Some(dict) => Value::Object(from_values(&dict.items, field)?),
            None => Value::Object(Map::new()),
        },
        Some(Data::ListValue(list)) => Value::Array(
            list.items
                .iter()
                .enumerate()
                .map(|(i, item)| from_any(item, &format!("{field}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        Some(Data::Message(any)) => {
            let mut map = Map::new();
            map.insert(PACKED.into(), Value::String(any.type_url.clone()));
            map.insert("base64".into(), Value::String(base64::encode(&any.value)));
            Value::Object(map)
        }
    })
}

/// Reads a map of named values.
pub fn from_values(values: &Values, field: &str) -> Result<Map<String, Value>, WireError> {
    values.iter().map(|(k, v)| Ok((k.clone(), from_any(v, &format!("{field}.{k}"))?))).collect()
}

fn from_value(value: &prost_types::Value, field: &str) -> Result<Value, WireError> {
    use prost_types::value::Kind;
    let error = |message: &str| WireError::Value { field: field.to_string(), message: message.to_string() };
    Ok(match &value.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(*b),
        Some(Kind::StringValue(s)) => Value::String(s.clone()),
        Some(Kind::NumberValue(d)) => Value::Number(Number::from_f64(*d).ok_or_else(|| error("not a finite number"))?),
        Some(Kind::StructValue(s)) => Value::Object(
            s.fields
                .iter()
                .map(|(k, v)| Ok((k.clone(), from_value(v, &format!("{field}.{k}"))?)))
                .collect::<Result<_, _>>()?,
        ),
        Some(Kind::ListValue(l)) => Value::Array(
            l.values
                .iter()
                .enumerate()
                .map(|(i, v)| from_value(v, &format!("{field}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
    })
}

/// `{"$protobuf": type_url, "base64": bytes}` and nothing else: a packed object read earlier.
fn packed(map: &Map<String, Value>) -> Option<prost_types::Any> {
    if map.len() != 2 {
        return None;
    }
    let type_url = map.get(PACKED)?.as_str()?;
    let value = base64::decode(map.get("base64")?.as_str()?)?;
    Some(prost_types::Any { type_url: type_url.to_string(), value })
}

/// Standard base64 with padding, for packed objects only.
mod base64 {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    pub fn encode(bytes: &[u8]) -> String {
        let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
        for chunk in bytes.chunks(3) {
            let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    pub fn decode(text: &str) -> Option<Vec<u8>> {
        let text = text.trim_end_matches('=');
        let mut out = Vec::with_capacity(text.len() * 3 / 4);
        let (mut acc, mut bits) = (0u32, 0u32);
        for c in text.bytes() {
            let v = ALPHABET.iter().position(|&a| a == c)? as u32;
            acc = (acc << 6) | v;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
                acc &= (1 << bits) - 1;
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_go_through_anydata_and_back() {
        let value = json!({"i": 3, "f": 1.0, "neg": -2.5, "s": "x", "b": true, "n": null,
                           "list": [1, "two", [3.5]], "dict": {"k": {"deep": [null]}}});
        let any = to_any(&value);
        assert!(matches!(&any.data, Some(any_data::Data::DictValue(_))));
        assert_eq!(from_any(&any, "v").unwrap(), value);
        // An integral float stays a double on the wire, an int an int.
        assert_eq!(to_any(&json!(1.0)).data, Some(any_data::Data::DoubleValue(1.0)));
        assert_eq!(to_any(&json!(7)).data, Some(any_data::Data::IntValue(7)));
    }

    #[test]
    fn a_packed_object_passes_through_unchanged() {
        let any = AnyData {
            data: Some(any_data::Data::Message(prost_types::Any {
                type_url: "type.googleapis.com/compas_pb.data.MeshData".into(),
                value: (0u8..=255).collect(),
            })),
        };
        let json = from_any(&any, "mesh").unwrap();
        assert_eq!(json[PACKED], "type.googleapis.com/compas_pb.data.MeshData");
        assert_eq!(to_any(&json), any);
        for n in 0..7 {
            let bytes: Vec<u8> = (0..n).map(|i| i * 37).collect();
            assert_eq!(base64::decode(&base64::encode(&bytes)).unwrap(), bytes);
        }
        assert_eq!(base64::encode(b"Ma"), "TWE=");
    }

    #[test]
    fn an_unreadable_value_names_its_place() {
        let nan = AnyData { data: Some(any_data::Data::DoubleValue(f64::NAN)) };
        let list = AnyData { data: Some(any_data::Data::ListValue(ListData { items: vec![to_any(&json!(1)), nan] })) };
        let err = from_values(&[("xs".to_string(), list)].into_iter().collect(), "outputs").unwrap_err();
        assert_eq!(err.to_string(), "outputs.xs[1]: not a finite number");
    }

    #[test]
    fn messages_round_trip_in_their_envelope() {
        let message = Message::Assignment(TaskAssignmentMessage {
            id: "bp.t1@r1".into(),
            task_type: "system.sleep".into(),
            params: to_values(json!({"duration": 0.5}).as_object().unwrap()),
            output_keys: vec!["out".into()],
            execution_mode: ExecutionMode::Competitive as i32,
            timestamp: Some(now()),
            ..Default::default()
        });
        let bytes = message.encode();
        assert_eq!(Message::decode(&bytes).unwrap(), message);
        assert_eq!(message.task_id(), "bp.t1@r1");
    }

    #[test]
    fn what_is_not_a_message_of_this_version_is_refused() {
        assert!(matches!(Message::decode(b"\xff\xff"), Err(WireError::Envelope(_))));
        let mut envelope = MessageData::decode(
            Message::Claim(TaskClaimRequest { task_id: "t".into(), agent_id: "a".into(), timestamp: None })
                .encode()
                .as_slice(),
        )
        .unwrap();
        envelope.version = Some("2.0.1".into());
        assert_eq!(Message::decode(&envelope.encode_to_vec()), Err(WireError::Version("2.0.1".into())));
        envelope.version = None;
        assert!(matches!(Message::decode(&envelope.encode_to_vec()), Err(WireError::Envelope(_))));
        envelope.version = Some("1.0.3".into());
        assert!(Message::decode(&envelope.encode_to_vec()).is_ok(), "1.x readers read 1.2");
        let plain = MessageData { data: Some(to_any(&json!(3))), version: Some("1.2.0".into()) };
        assert!(matches!(Message::decode(&plain.encode_to_vec()), Err(WireError::NotAMessage(_))));
    }
}
