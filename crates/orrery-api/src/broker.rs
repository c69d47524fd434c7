//! The MQTT broker whose antikythera agents run tasks of the sessions started here
//! (`broker_settings`, `save_broker_settings`, `check_broker`): kept in the store (setting
//! `broker`), so that the app and the CLI share it. A session launched while a broker is set
//! sends it the task types Orrery has no agent for, and those of `via_broker`
//! (`orrery_engine::broker`); a broker that cannot be reached fails the launch, naming it,
//! before the session exists. One connection per broker address serves every session of the
//! process.

use super::*;

use std::time::Duration;

use orrery_broker::{BrokerAddress, Dispatcher, Policy};
use orrery_engine::broker::BrokerOptions;

use crate::catalogue::NoArguments;

/// The store's key for [`BrokerSettings`].
pub const SETTING: &str = "broker";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BrokerSettings {
    /// `mqtt://HOST:PORT`; none: built-in agents only.
    pub broker: Option<String>,
    /// Task types sent to the broker's agents although Orrery runs them itself: names, or
    /// prefixes ending in `*`.
    #[serde(default)]
    pub via_broker: Vec<String>,
    /// Seconds an agent that claimed a task may stay silent before the task is published again
    /// or fails with `AGENT_TIMEOUT`; none: no limit.
    pub agent_timeout_s: Option<f64>,
    /// How many times a task whose agent went silent is published again.
    #[serde(default)]
    pub agent_retries: u32,
    /// Seconds before an unclaimed task is first published again (default 2; it doubles up to
    /// 90 s, 5 times, then the task fails with `NO_AGENT_CLAIMED`).
    pub claim_wait_s: Option<f64>,
}

impl BrokerSettings {
    /// Checks every field; the address parsed.
    pub fn validate(&self) -> Result<Option<BrokerAddress>, Failure> {
        let invalid = |m: String| Failure::new(FailureCode::InvalidArgument, m);
        let positive = |name: &str, v: Option<f64>| match v {
            Some(s) if !(s.is_finite() && s > 0.0) => {
                Err(invalid(format!("{name} must be a number of seconds > 0, got {s}")))
            }
            _ => Ok(()),
        };
        positive("agent_timeout_s", self.agent_timeout_s)?;
        positive("claim_wait_s", self.claim_wait_s)?;
        if let Some(p) = self.via_broker.iter().find(|p| p.trim().is_empty() || p.contains(char::is_whitespace)) {
            return Err(invalid(format!("via_broker: '{p}' is not a task type nor a prefix ending in *")));
        }
        match self.broker.as_deref().map(str::trim).filter(|b| !b.is_empty()) {
            None => Ok(None),
            Some(b) => b.parse().map(Some).map_err(|e: orrery_broker::BusError| invalid(e.to_string())),
        }
    }

    pub fn policy(&self) -> Policy {
        Policy {
            redispatch_base: Duration::from_secs_f64(self.claim_wait_s.unwrap_or(2.0)),
            silence: self.agent_timeout_s.map(Duration::from_secs_f64),
            silence_retries: self.agent_retries,
            ..Policy::default()
        }
    }

    /// How a run reaches the broker's agents over `dispatcher` (connected to [`Self::broker`]).
    pub fn options(&self, dispatcher: Arc<Dispatcher>) -> BrokerOptions {
        BrokerOptions { dispatcher, types: self.via_broker.clone(), policy: self.policy() }
    }

    /// The settings kept in the store (defaults when none were saved).
    pub fn stored(store: &orrery_store::Store) -> Result<BrokerSettings, Failure> {
        match store.setting(SETTING)? {
            None => Ok(BrokerSettings::default()),
            Some(value) => serde_json::from_value(value).map_err(|e| {
                Failure::new(FailureCode::Store, format!("the stored broker settings cannot be read: {e}"))
            }),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckBrokerArguments {
    /// `mqtt://HOST:PORT`
    pub broker: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BrokerCheck {
    /// The address as understood.
    pub broker: String,
    pub reachable: bool,
    /// Why not, when it cannot be reached.
    pub message: Option<String>,
}

impl Api {
    /// The broker settings kept in the store (defaults when none were saved): what a launch
    /// uses unless it is given its own.
    pub async fn broker_settings(&self) -> Result<BrokerSettings, Failure> {
        self.blocking(|db| BrokerSettings::stored(&open(db)?)).await
    }

    /// The broker options of a session launched now, from `settings` or else the stored ones:
    /// `None` without a broker; a failure naming the broker when it cannot be reached.
    pub(crate) async fn broker_options(
        &self,
        settings: Option<BrokerSettings>,
    ) -> Result<Option<BrokerOptions>, Failure> {
        let settings = match settings {
            Some(settings) => settings,
            None => self.broker_settings().await?,
        };
        let Some(address) = settings.validate()? else { return Ok(None) };
        let key = address.to_string();
        let mut connections = self.inner.brokers.lock().await;
        let dispatcher = match connections.get(&key) {
            Some(d) => d.clone(),
            None => {
                let d = Dispatcher::connect(&address, &format!("orrery-{}", std::process::id()))
                    .await
                    .map_err(|e| Failure::new(FailureCode::BrokerUnreachable, e.to_string()))?;
                connections.insert(key, d.clone());
                d
            }
        };
        Ok(Some(settings.options(dispatcher)))
    }
}

pub(crate) fn register(jobs: &mut Vec<Job>) {
    jobs.push(job(
        "broker_settings",
        "The MQTT broker whose antikythera agents run tasks of sessions started here, and how.",
        |api: Api, _: NoArguments| async move { api.blocking(|db| BrokerSettings::stored(&open(db)?)).await },
    ));
    jobs.push(
        job(
            "save_broker_settings",
            "Saves the broker settings (checked; an empty broker clears it). Sessions started afterwards use them.",
            |api: Api, mut args: BrokerSettings| async move {
                args.broker = args.validate()?.map(|a| a.to_string());
                args.via_broker = args.via_broker.iter().map(|p| p.trim().to_string()).collect();
                let value =
                    serde_json::to_value(&args).map_err(|e| Failure::new(FailureCode::Internal, e.to_string()))?;
                api.blocking(move |db| {
                    open(db)?.put_setting(SETTING, Some(&value))?;
                    Ok(args)
                })
                .await
            },
        )
        .writing(),
    );
    jobs.push(job(
        "check_broker",
        "Connects to an MQTT broker and says whether it answered.",
        |_api: Api, args: CheckBrokerArguments| async move {
            let address: BrokerAddress = args
                .broker
                .trim()
                .parse()
                .map_err(|e: orrery_broker::BusError| Failure::new(FailureCode::InvalidArgument, e.to_string()))?;
            let client = format!("orrery-check-{}", std::process::id());
            let answer = match orrery_broker::Bus::connect(&address, &client, &[]).await {
                Ok(_) => BrokerCheck { broker: address.to_string(), reachable: true, message: None },
                Err(e) => BrokerCheck { broker: address.to_string(), reachable: false, message: Some(e.to_string()) },
            };
            Ok::<BrokerCheck, Failure>(answer)
        },
    ));
}
