//! One MQTT connection to the broker: publishes protocol messages and hands over those that
//! arrive on the subscribed topics, decoded. The connection is kept up by its own task: a lost
//! broker is reported, tried again every half second, and the topics are subscribed again when
//! it is back (the session is clean, as the reference's clients use).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
use tokio::sync::mpsc;

use crate::wire::{Message, WireError};

/// The reference's topics, and Orrery's heartbeat topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Topic {
    /// Assignments, orchestrator → agents.
    Start,
    Claim,
    Allocation,
    Completed,
    Ack,
    /// `TaskStatusUpdateMessage` heartbeats of Orrery's agents (not a reference topic: its
    /// orchestrator does not subscribe to it, its agents do not send it).
    Status,
}

impl Topic {
    pub const ALL: [Topic; 6] =
        [Topic::Start, Topic::Claim, Topic::Allocation, Topic::Completed, Topic::Ack, Topic::Status];

    pub fn name(self) -> &'static str {
        match self {
            Topic::Start => "antikythera/task/start",
            Topic::Claim => "antikythera/task/claim",
            Topic::Allocation => "antikythera/task/allocation",
            Topic::Completed => "antikythera/task/completed",
            Topic::Ack => "antikythera/task/ack",
            Topic::Status => "antikythera/task/status",
        }
    }

    fn from_name(name: &str) -> Option<Topic> {
        Topic::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// Where the broker listens: `mqtt://host:port`, `tcp://host:port`, `host:port` or `host`
/// (port 1883).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerAddress {
    pub host: String,
    pub port: u16,
}

impl FromStr for BrokerAddress {
    type Err = BusError;

    fn from_str(text: &str) -> Result<Self, BusError> {
        let bad = |why: &str| BusError::BadAddress { address: text.to_string(), reason: why.to_string() };
        let rest = match text.split_once("://") {
            Some(("mqtt" | "tcp", rest)) => rest,
            Some(("mqtts" | "ssl" | "wss" | "ws", _)) => {
                return Err(bad("only plain MQTT over TCP is supported (mqtt://host:port), not TLS or websockets"))
            }
            Some((scheme, _)) => return Err(bad(&format!("unknown scheme '{scheme}': use mqtt://host:port"))),
            None => text,
        };
        let rest = rest.trim_end_matches('/');
        let (host, port) = match rest.rsplit_once(':') {
            Some((host, port)) => {
                (host, port.parse::<u16>().map_err(|_| bad(&format!("'{port}' is not a port number")))?)
            }
            None => (rest, 1883),
        };
        if host.is_empty() || host.contains('/') {
            return Err(bad("no host name"));
        }
        Ok(BrokerAddress { host: host.to_string(), port })
    }
}

impl fmt::Display for BrokerAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mqtt://{}:{}", self.host, self.port)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error("'{address}' is not a broker address: {reason}")]
    BadAddress { address: String, reason: String },
    #[error("cannot reach the MQTT broker at {address}: {reason}")]
    Unreachable { address: BrokerAddress, reason: String },
    #[error("the connection to the MQTT broker is closed")]
    Closed,
}

/// What the connection hands over.
#[derive(Debug)]
pub enum BusEvent {
    Message(Topic, Message),
    /// A payload on a subscribed topic that is not a protocol message.
    Unreadable {
        topic: Topic,
        error: WireError,
    },
    /// The broker went away; the connection is tried again.
    Lost(String),
    /// Connected (again) and subscribed.
    Connected,
}

/// A live connection. Dropping it closes the connection.
pub struct Bus {
    client: AsyncClient,
    address: BrokerAddress,
    driver: tokio::task::JoinHandle<()>,
}

impl Drop for Bus {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// How long [`Bus::connect`] waits for the broker's first answer.
const CONNECT_WAIT: Duration = Duration::from_secs(5);

impl Bus {
    /// Connects as `client_id` and subscribes to `topics`; answers once the broker accepted the
    /// connection, or the reason it could not be reached.
    pub async fn connect(
        address: &BrokerAddress,
        client_id: &str,
        topics: &[Topic],
    ) -> Result<(Bus, mpsc::UnboundedReceiver<BusEvent>), BusError> {
        let mut options = MqttOptions::new(client_id, address.host.clone(), address.port);
        options.set_keep_alive(Duration::from_secs(5));
        options.set_clean_session(true);
        // Inputs and outputs may be large (rumqttc's default is 10 KiB).
        options.set_max_packet_size(64 << 20, 64 << 20);
        let (client, mut events) = AsyncClient::new(options, 1024);
        // Protocol messages are small and each waits for an answer: no Nagle delay (with the
        // peer's delayed ack it cost ~40 ms per message).
        let mut network = events.network_options();
        network.set_tcp_nodelay(true);
        events.set_network_options(network);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let subscriber = client.clone();
        let topics: Vec<Topic> = topics.to_vec();
        let driver = tokio::spawn(async move {
            loop {
                let event = match events.poll().await {
                    Ok(Event::Incoming(Packet::ConnAck(_))) => {
                        let filters =
                            topics.iter().map(|t| rumqttc::SubscribeFilter::new(t.name().into(), QoS::AtLeastOnce));
                        if !topics.is_empty() && subscriber.subscribe_many(filters).await.is_err() {
                            return;
                        }
                        Some(BusEvent::Connected)
                    }
                    Ok(Event::Incoming(Packet::Publish(p))) => {
                        Topic::from_name(&p.topic).map(|topic| match Message::decode(&p.payload) {
                            Ok(message) => BusEvent::Message(topic, message),
                            Err(error) => BusEvent::Unreadable { topic, error },
                        })
                    }
                    Ok(_) => None,
                    Err(e) => {
                        let lost = tx.send(BusEvent::Lost(e.to_string()));
                        if lost.is_err() {
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        None
                    }
                };
                if let Some(event) = event {
                    if tx.send(event).is_err() {
                        return;
                    }
                }
            }
        });
        let bus = Bus { client, address: address.clone(), driver };
        match tokio::time::timeout(CONNECT_WAIT, rx.recv()).await {
            Ok(Some(BusEvent::Connected)) => Ok((bus, rx)),
            Ok(Some(BusEvent::Lost(reason))) => Err(BusError::Unreachable { address: address.clone(), reason }),
            Ok(_) => Err(BusError::Closed),
            Err(_) => Err(BusError::Unreachable { address: address.clone(), reason: "no answer in 5 s".into() }),
        }
    }

    pub fn address(&self) -> &BrokerAddress {
        &self.address
    }

    /// Queues `message` on `topic`, at most once as the reference's clients publish: the
    /// protocol has its own recovery (re-publication, the silence limit). At least once cost
    /// ~40 ms per message: the broker's PUBACK and the next message met Nagle's algorithm and a
    /// delayed ACK on Mosquitto's side (measured with scripts/bench_broker.sh).
    pub async fn publish(&self, topic: Topic, message: &Message) -> Result<(), BusError> {
        self.client.publish(topic.name(), QoS::AtMostOnce, false, message.encode()).await.map_err(|_| BusError::Closed)
    }

    /// [`Bus::publish`] without waiting, for where nothing can wait (a drop).
    pub fn try_publish(&self, topic: Topic, message: &Message) -> Result<(), BusError> {
        self.client.try_publish(topic.name(), QoS::AtMostOnce, false, message.encode()).map_err(|_| BusError::Closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_addresses() {
        let a: BrokerAddress = "mqtt://127.0.0.1:1884".parse().unwrap();
        assert_eq!((a.host.as_str(), a.port), ("127.0.0.1", 1884));
        assert_eq!("localhost".parse::<BrokerAddress>().unwrap().port, 1883);
        assert_eq!("tcp://h:2/".parse::<BrokerAddress>().unwrap().to_string(), "mqtt://h:2");
        for (text, why) in [
            ("mqtts://h:8883", "not TLS"),
            ("http://h", "unknown scheme 'http'"),
            ("h:port", "'port' is not a port number"),
            ("mqtt://:1883", "no host name"),
        ] {
            let err = text.parse::<BrokerAddress>().unwrap_err().to_string();
            assert!(err.contains(why) && err.contains(text), "{text}: {err}");
        }
    }
}
