//! Object sources (being written).
