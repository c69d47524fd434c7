//! Payloads the reference's own codec wrote (antikythera-sdk 0.5.1, compas_pb 1.2.0:
//! `ProtobufMessageCodec().encode(TaskAssignmentMessage(...))`), read by Orrery's definitions.

use orrery_broker::wire::{self, Message};
use serde_json::json;

fn hex(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn an_assignment_written_by_the_reference() {
    // TaskAssignmentMessage(id="bp.t1", type="system.sleep", inputs={"a": 1, "b": [1.5, "x"], "n": None},
    //   output_keys=["o"], params={"duration": 0.1}, context={"element_id": "e"}, execution_mode=EXCLUSIVE)
    let payload = hex("0ac1010abe010a38747970652e676f6f676c65617069732e636f6d2f616e74696b7974686572612e76312e5461736b41737369676e6d656e744d6573736167651281010a0562702e7431120c73797374656d2e736c6565701a190a016212143a120a0929000000000000f83f0a0512031a01781a090a016e1204120208001a070a01611202200122016f2a150a086475726174696f6e1209299a9999999999b93f320c08cc95b9d80610d0a49deb0242130a0a656c656d656e745f6964120512031a01651205312e322e30");
    let Message::Assignment(m) = Message::decode(&payload).unwrap() else { panic!("not an assignment") };
    assert_eq!((m.id.as_str(), m.task_type.as_str()), ("bp.t1", "system.sleep"));
    assert_eq!(
        wire::from_values(&m.inputs, "inputs").unwrap(),
        *json!({"a": 1, "b": [1.5, "x"], "n": null}).as_object().unwrap()
    );
    assert_eq!(wire::from_values(&m.params, "params").unwrap(), *json!({"duration": 0.1}).as_object().unwrap());
    assert_eq!(wire::from_values(&m.context, "context").unwrap(), *json!({"element_id": "e"}).as_object().unwrap());
    assert_eq!(m.output_keys, ["o"]);
    assert_eq!(m.execution_mode, wire::ExecutionMode::Exclusive as i32);
    assert!(m.timestamp.is_some());
    // Written back, it is the same message.
    let again = Message::Assignment(m.clone()).encode();
    assert_eq!(Message::decode(&again).unwrap(), Message::Assignment(m));
}
