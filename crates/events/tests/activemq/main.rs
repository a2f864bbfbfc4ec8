//! The STOMP sink against a real ActiveMQ broker (`arca_testkit::activemq`): the crate's only
//! integration tests, in a binary named after the service they need.

mod fixity_events;
mod stomp_broker;
