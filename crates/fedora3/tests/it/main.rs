//! arca-fedora3's integration tests, one binary.

mod common;

mod foxml;
mod source;
