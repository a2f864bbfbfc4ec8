//! Notifications: every committed change as an ActivityStreams 2.0 event in the shape Fedora 6
//! sends, delivered asynchronously from the catalog's change log to a STOMP broker, and
//! replayable over HTTP.

pub mod stomp;
