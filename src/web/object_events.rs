//! An object's Events while its panel is open (`/applications/NAME/events?group=&kind=
//! &namespace=&name=`): a watch of the Events of that object (field selector on
//! `involvedObject.kind` and `involvedObject.name` in its namespace), made for one viewer with
//! the controller's client, sending the panel's Events table again, newest first, as an
//! [`EVENTS_EVENT`] whenever one is added, changed or deleted. The Events it holds live as long
//! as the viewer's stream; nothing is kept after it or logged.

use std::collections::BTreeMap;

use futures::{Stream, StreamExt};
use hyper::body::Bytes;
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use serde_json::Value;

use super::events::event;
use super::object_panel::events_table;
use flotilla_core::manifest::ObjectKey;

/// The event carrying the Events table.
pub const EVENTS_EVENT: &str = "events";

/// The Events of one object seen so far, by uid.
#[derive(Default)]
struct Seen {
    events: BTreeMap<String, Value>,
    /// Filled by a (re)list; replaces `events` at its end.
    listing: Option<BTreeMap<String, Value>>,
}

impl Seen {
    /// Takes in one watch event; `true` when the table changed.
    fn take(&mut self, change: watcher::Event<Event>) -> bool {
        let entry = |event: &Event| {
            (
                event.uid().unwrap_or_default(),
                serde_json::to_value(event).unwrap_or_default(),
            )
        };
        match change {
            watcher::Event::Init => {
                self.listing = Some(BTreeMap::new());
                false
            }
            watcher::Event::InitApply(event) => {
                let (uid, value) = entry(&event);
                self.listing.get_or_insert_default().insert(uid, value);
                false
            }
            watcher::Event::InitDone => {
                self.events = self.listing.take().unwrap_or_default();
                true
            }
            watcher::Event::Apply(event) => {
                let (uid, value) = entry(&event);
                self.events.insert(uid, value);
                true
            }
            watcher::Event::Delete(event) => {
                self.events.remove(&event.uid().unwrap_or_default());
                true
            }
        }
    }
}

/// The Events table of `key`, sent when the watch (through `client`) has listed them and again
/// after every change, until the stream is dropped.
pub fn object_events(
    client: Client,
    key: &ObjectKey,
) -> impl Stream<Item = Bytes> + Send + 'static {
    let api = Api::<Event>::namespaced(client, key.namespace.as_deref().unwrap_or("default"));
    let selector = format!(
        "involvedObject.kind={},involvedObject.name={}",
        key.kind, key.name
    );
    watcher(api, watcher::Config::default().fields(&selector))
        .default_backoff()
        .scan(Seen::default(), |seen, change| {
            let table = match change {
                Ok(change) => seen.take(change).then(|| {
                    let events: Vec<Value> = seen.events.values().cloned().collect();
                    events_table(&events, Timestamp::now())
                }),
                Err(error) => {
                    tracing::debug!("web view Events watch: {error}");
                    None
                }
            };
            futures::future::ready(Some(table))
        })
        .filter_map(|table| {
            futures::future::ready(table.map(|table| Bytes::from(event(EVENTS_EVENT, &table))))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event_named(uid: &str) -> Event {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": uid, "uid": uid},
            "involvedObject": {},
        }))
        .unwrap()
    }

    #[test]
    fn a_relist_replaces_what_was_seen_and_changes_update_it() {
        let mut seen = Seen::default();
        assert!(!seen.take(watcher::Event::Init));
        assert!(!seen.take(watcher::Event::InitApply(event_named("a"))));
        assert!(seen.take(watcher::Event::InitDone));
        assert!(seen.take(watcher::Event::Apply(event_named("b"))));
        assert_eq!(seen.events.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert!(seen.take(watcher::Event::Delete(event_named("a"))));
        seen.take(watcher::Event::Init);
        seen.take(watcher::Event::InitApply(event_named("c")));
        assert_eq!(
            seen.events.keys().collect::<Vec<_>>(),
            ["b"],
            "until the list is done"
        );
        seen.take(watcher::Event::InitDone);
        assert_eq!(seen.events.keys().collect::<Vec<_>>(), ["c"]);
    }
}
