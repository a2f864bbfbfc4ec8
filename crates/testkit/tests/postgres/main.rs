//! The testkit's PostgreSQL helper against a real PostgreSQL: a binary named after the service.

mod postgres;
