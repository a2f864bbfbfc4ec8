//! TEMPORARY stub of text extraction (replaced by the real module).
#![allow(missing_docs, dead_code)]
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;
#[derive(Debug, Clone)]
pub struct ExtractLimits { pub max_input_bytes: u64, pub max_text_bytes: usize, pub timeout: Duration, pub memory_bytes: u64, pub workers: usize }
impl Default for ExtractLimits { fn default() -> Self { Self { max_input_bytes: 256 << 20, max_text_bytes: 10 << 20, timeout: Duration::from_secs(30), memory_bytes: 1 << 30, workers: 2 } } }
#[derive(Debug, thiserror::Error)]
pub enum ExtractError { #[error("unsupported {media_type}")] Unsupported { media_type: String }, #[error("too large")] TooLarge { size: u64, limit: u64 }, #[error("timed out")] TimedOut(Duration), #[error("{0}")] Failed(String), #[error(transparent)] Io(#[from] std::io::Error) }
pub fn is_extractable(media_type: &str) -> bool { media_type.starts_with("text/") || media_type.starts_with("application/pdf") }
#[derive(Debug, Clone)]
pub struct ExtractProgram { pub program: PathBuf, pub args: Vec<OsString> }
pub struct Extractor { limits: ExtractLimits }
impl Extractor {
    pub fn new(limits: ExtractLimits, _program: ExtractProgram) -> Self { Self { limits } }
    pub async fn extract(&self, path: &Path, _media_type: &str) -> Result<String, ExtractError> { Ok(String::from_utf8_lossy(&std::fs::read(path)?).into_owned()) }
}
pub fn run_child(_args: Vec<OsString>) -> i32 { 0 }
pub struct TextCache { dir: PathBuf }
impl TextCache {
    pub fn open(dir: &Path) -> std::io::Result<Self> { std::fs::create_dir_all(dir)?; Ok(Self { dir: dir.into() }) }
    pub fn get(&self, _digest: &str) -> Option<Result<String, String>> { None }
    pub fn put(&self, _digest: &str, _result: &Result<String, String>) -> std::io::Result<()> { Ok(()) }
    pub fn clear(&self) -> std::io::Result<()> { Ok(()) }
}
