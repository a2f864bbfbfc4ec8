//! Web Access Control: access modes and what each request needs.

mod action;
mod modes;
pub mod vocab;

pub use action::{required, Action};
pub use modes::{Mode, Modes};
