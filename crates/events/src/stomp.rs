//! A minimal STOMP 1.2 client: enough to publish with receipts and to subscribe in tests.
