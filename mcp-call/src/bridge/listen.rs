//! A modern host's subscriptions (`subscriptions/listen`, 2026-07-28): what each asked for and
//! was granted, and which of the upstream's notifications go out on which of them.
//!
//! A host speaking 2026-07-28 is sent a notification only on a subscription that asked for
//! it, under that subscription's id (the spec forbids any other); a legacy host gets the list
//! changes the bridge relays and the updates of the resources it subscribed to as they are.
//! A subscription is acknowledged at once with the list changes the upstream declares, or,
//! when it names resources the upstream is not subscribed to yet, once the upstream took or
//! refused each. It ends when the host cancels it; it is never answered otherwise.
//!
//! Plain state under one lock: nothing here writes to the host or runs an operation.

use std::sync::Mutex;

use mcp_proto::Subscription;
use serde_json::Value;

use super::host;
use super::locked;

/// One of the host's subscriptions.
struct Listen {
    id: Value,
    /// What it was granted so far (the resources once the upstream took them).
    granted: Subscription,
    /// The resources the upstream has not taken or refused yet: acknowledged when none is left.
    waiting: Vec<String>,
    /// The list changes it was granted wait for the upstream's own subscription to be
    /// acknowledged (a modern upstream sends them only on one).
    unheard: bool,
}

/// The host's subscriptions.
#[derive(Default)]
pub(super) struct Listens {
    open: Mutex<Vec<Listen>>,
}

/// What a new subscription needs.
pub(super) struct Opened {
    /// Its acknowledgment, when nothing is waited for.
    pub(super) acknowledged: Option<String>,
    /// The resources the upstream must be subscribed to first.
    pub(super) subscribe: Vec<String>,
}

impl Listens {
    /// The host's `subscriptions/listen` `id` asks for `filter`. `declared`: the list changes
    /// the upstream sends; `subscribable`: whether it offers resource subscriptions;
    /// `subscribed`: whether it is subscribed to a resource already; `heard`: whether the
    /// upstream's list changes reach the bridge now ([`Self::unheard_settled`] acknowledges it later).
    pub(super) fn open(
        &self,
        id: &Value,
        filter: &Subscription,
        declared: &Subscription,
        subscribable: bool,
        subscribed: impl Fn(&str) -> bool,
        heard: bool,
    ) -> Opened {
        let mut granted = Subscription {
            tools_list_changed: filter.tools_list_changed && declared.tools_list_changed,
            prompts_list_changed: filter.prompts_list_changed && declared.prompts_list_changed,
            resources_list_changed: filter.resources_list_changed
                && declared.resources_list_changed,
            resource_subscriptions: Vec::new(),
        };
        let mut waiting = Vec::new();
        if subscribable {
            for uri in &filter.resource_subscriptions {
                match subscribed(uri) {
                    true => granted.resource_subscriptions.push(uri.clone()),
                    false if !waiting.contains(uri) => waiting.push(uri.clone()),
                    false => {}
                }
            }
        }
        let unheard = !heard
            && (granted.tools_list_changed
                || granted.prompts_list_changed
                || granted.resources_list_changed);
        let acknowledged =
            (waiting.is_empty() && !unheard).then(|| host::acknowledged_line(id, &granted));
        let subscribe = waiting.clone();
        let mut open = locked(&self.open);
        open.retain(|listen| listen.id != *id);
        open.push(Listen {
            id: id.clone(),
            granted,
            waiting,
            unheard,
        });
        Opened {
            acknowledged,
            subscribe,
        }
    }

    /// The upstream took (`taken`) or refused the subscription to `uri` the host's
    /// subscription `id` waits for: its acknowledgment, once nothing is left to wait for.
    pub(super) fn settled(&self, id: &Value, uri: &str, taken: bool) -> Option<String> {
        let mut open = locked(&self.open);
        let listen = open.iter_mut().find(|listen| listen.id == *id)?;
        let before = listen.waiting.len();
        listen.waiting.retain(|waiting| waiting != uri);
        if listen.waiting.len() == before {
            return None;
        }
        if taken {
            listen.granted.resource_subscriptions.push(uri.to_owned());
        }
        (listen.waiting.is_empty() && !listen.unheard)
            .then(|| host::acknowledged_line(id, &listen.granted))
    }

    /// The upstream's list changes reach the bridge now (`heard`: its subscription was
    /// acknowledged), or never will (its subscriptions keep failing: the list changes are no
    /// longer granted): the acknowledgments of the subscriptions that waited for that and
    /// nothing else.
    pub(super) fn unheard_settled(&self, heard: bool) -> Vec<String> {
        let mut open = locked(&self.open);
        let mut lines = Vec::new();
        for listen in open.iter_mut().filter(|listen| listen.unheard) {
            listen.unheard = false;
            if !heard {
                let granted = &mut listen.granted;
                granted.tools_list_changed = false;
                granted.prompts_list_changed = false;
                granted.resources_list_changed = false;
            }
            if listen.waiting.is_empty() {
                lines.push(host::acknowledged_line(&listen.id, &listen.granted));
            }
        }
        lines
    }

    /// The host cancelled its subscription `id` (or a request of that id: nothing then).
    pub(super) fn close(&self, id: &Value) {
        locked(&self.open).retain(|listen| listen.id != *id);
    }

    /// The lines the upstream's notification `method` with `params` makes: one on each
    /// acknowledged subscription that asked for it.
    pub(super) fn lines(&self, method: &str, params: &Value) -> Vec<String> {
        let uri = params.get("uri").and_then(Value::as_str);
        let wants = |granted: &Subscription| match method {
            "notifications/tools/list_changed" => granted.tools_list_changed,
            "notifications/prompts/list_changed" => granted.prompts_list_changed,
            "notifications/resources/list_changed" => granted.resources_list_changed,
            "notifications/resources/updated" => {
                uri.is_some_and(|uri| granted.resource_subscriptions.iter().any(|r| r == uri))
            }
            _ => false,
        };
        (locked(&self.open).iter())
            .filter(|listen| listen.waiting.is_empty() && !listen.unheard)
            .filter(|listen| wants(&listen.granted))
            .map(|listen| host::on_subscription(&listen.id, method, params))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(line: &str) -> Value {
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn a_host_subscription_gets_only_what_it_asked_for_under_its_own_id() {
        let listens = Listens::default();
        let declared = Subscription {
            tools_list_changed: true,
            prompts_list_changed: true,
            ..Subscription::default()
        };
        let filter = Subscription {
            tools_list_changed: true,
            resources_list_changed: true,
            ..Subscription::default()
        };
        let opened = listens.open(&json!("l-1"), &filter, &declared, true, |_| false, true);
        assert!(opened.subscribe.is_empty());
        let ack = read(&opened.acknowledged.unwrap());
        // The resources' list changes are not declared: not granted.
        assert_eq!(
            ack["params"]["notifications"],
            json!({"toolsListChanged": true})
        );
        let lines = listens.lines("notifications/tools/list_changed", &json!({}));
        assert_eq!(lines.len(), 1);
        assert_eq!(
            read(&lines[0])["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            "l-1"
        );
        assert!(
            listens
                .lines("notifications/prompts/list_changed", &json!({}))
                .is_empty()
        );
        listens.close(&json!("l-1"));
        assert!(
            listens
                .lines("notifications/tools/list_changed", &json!({}))
                .is_empty()
        );
    }

    #[test]
    fn a_subscription_naming_resources_is_acknowledged_once_the_upstream_took_them() {
        let listens = Listens::default();
        let filter = Subscription {
            resource_subscriptions: vec!["a://1".into(), "a://2".into(), "a://3".into()],
            ..Subscription::default()
        };
        let none = Subscription::default();
        let opened = listens.open(&json!(9), &filter, &none, true, |uri| uri == "a://3", true);
        assert_eq!(opened.acknowledged, None);
        assert_eq!(opened.subscribe, ["a://1", "a://2"]);
        // Nothing goes out on it before its acknowledgment.
        let update = json!({"uri": "a://3"});
        assert!(
            listens
                .lines("notifications/resources/updated", &update)
                .is_empty()
        );
        assert_eq!(listens.settled(&json!(9), "a://1", true), None);
        assert_eq!(listens.settled(&json!(9), "a://1", true), None, "once");
        let ack = read(&listens.settled(&json!(9), "a://2", false).unwrap());
        assert_eq!(
            ack["params"]["notifications"],
            json!({"resourceSubscriptions": ["a://3", "a://1"]})
        );
        assert_eq!(
            listens
                .lines("notifications/resources/updated", &update)
                .len(),
            1
        );
        let refused = json!({"uri": "a://2"});
        assert!(
            listens
                .lines("notifications/resources/updated", &refused)
                .is_empty()
        );
        // An upstream without resource subscriptions: none granted, acknowledged at once.
        let opened = listens.open(&json!(10), &filter, &none, false, |_| true, true);
        let ack = read(&opened.acknowledged.unwrap());
        assert_eq!(ack["params"]["notifications"], json!({}));
    }

    #[test]
    fn list_changes_are_acknowledged_once_the_upstream_s_subscription_was() {
        let listens = Listens::default();
        let tools = Subscription {
            tools_list_changed: true,
            ..Subscription::default()
        };
        let opened = listens.open(&json!(1), &tools, &tools, false, |_| false, false);
        assert_eq!(
            opened.acknowledged, None,
            "the upstream does not listen yet"
        );
        assert!(
            listens
                .lines("notifications/tools/list_changed", &json!({}))
                .is_empty()
        );
        let acks = listens.unheard_settled(true);
        assert_eq!(acks.len(), 1);
        assert_eq!(
            read(&acks[0])["params"]["notifications"],
            json!({"toolsListChanged": true})
        );
        assert!(listens.unheard_settled(true).is_empty(), "once");
        assert_eq!(
            listens
                .lines("notifications/tools/list_changed", &json!({}))
                .len(),
            1
        );
        // An upstream that is never listened to: acknowledged without the list changes.
        let opened = listens.open(&json!(2), &tools, &tools, false, |_| false, false);
        assert_eq!(opened.acknowledged, None);
        let acks = listens.unheard_settled(false);
        assert_eq!(read(&acks[0])["params"]["notifications"], json!({}));
    }
}
