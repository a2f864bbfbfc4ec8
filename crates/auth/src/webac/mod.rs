//! Web Access Control (to be written).
