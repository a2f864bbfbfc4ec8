//! The FOXML 1.1 reader (being written).
