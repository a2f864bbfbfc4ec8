//! Settings of an arca server. Every field has a default, so `arca serve` runs with none;
//! [`Config::load`] layers a TOML file, then `ARCA_*` environment variables, and the CLI
//! applies its flags last.
#![warn(missing_docs)]

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Errors while loading settings.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The config file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The config file is not valid TOML for these settings.
    #[error("invalid config file {path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: toml::de::Error,
    },
    /// A value is out of range.
    #[error("invalid setting: {0}")]
    Invalid(String),
}

/// All settings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address to listen on (`ARCA_LISTEN`).
    pub listen: String,
    /// Data directory: OCFL root, staging area and catalog, all on one filesystem
    /// (`ARCA_DATA`).
    pub data: PathBuf,
    /// Path prefix of the Fedora API (`ARCA_BASE_PATH`).
    pub base_path: String,
    /// External URL of the REST root when behind a proxy (`ARCA_BASE_URL`).
    pub base_url: Option<String>,
    /// User recorded as creator/modifier until authentication exists (`ARCA_USER`).
    pub default_user: String,
    /// Log filter, e.g. `info` or `arca=debug` (`ARCA_LOG`).
    pub log: String,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            data: PathBuf::from("./arca-data"),
            base_path: "/rest".into(),
            base_url: None,
            default_user: "fedoraAdmin".into(),
            log: "info".into(),
        }
    }
}

impl Config {
    /// Defaults, overlaid by `file` (if given), then by `ARCA_*` environment variables.
    pub fn load(file: Option<&Path>) -> Result<Self, Error> {
        let mut config = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
                    path: path.to_path_buf(),
                    source,
                })?;
                toml::from_str(&text).map_err(|source| Error::Parse {
                    path: path.to_path_buf(),
                    source,
                })?
            }
            None => Config::default(),
        };
        config.apply_env(|k| std::env::var(k).ok());
        config.validate()?;
        Ok(config)
    }

    /// Applies `ARCA_*` variables through `get` (a parameter so tests need no process env).
    pub fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) {
        if let Some(v) = get("ARCA_LISTEN") {
            self.listen = v;
        }
        if let Some(v) = get("ARCA_DATA") {
            self.data = PathBuf::from(v);
        }
        if let Some(v) = get("ARCA_BASE_PATH") {
            self.base_path = v;
        }
        if let Some(v) = get("ARCA_BASE_URL") {
            self.base_url = Some(v);
        }
        if let Some(v) = get("ARCA_USER") {
            self.default_user = v;
        }
        if let Some(v) = get("ARCA_LOG") {
            self.log = v;
        }
    }

    /// Checks and normalizes values.
    pub fn validate(&mut self) -> Result<(), Error> {
        let bp = self.base_path.trim_end_matches('/').to_string();
        if !bp.starts_with('/') || bp.len() < 2 {
            return Err(Error::Invalid(format!(
                "base_path must start with '/' and name a path, e.g. /rest (got {:?})",
                self.base_path
            )));
        }
        self.base_path = bp;
        if let Some(u) = &self.base_url {
            self.base_url = Some(u.trim_end_matches('/').to_string());
        }
        if self.listen.parse::<std::net::SocketAddr>().is_err() {
            return Err(Error::Invalid(format!(
                "listen must be an address such as 127.0.0.1:8080 (got {:?})",
                self.listen
            )));
        }
        Ok(())
    }

    /// The OCFL storage root inside the data directory (named as in Fedora 6).
    pub fn ocfl_root(&self) -> PathBuf {
        self.data.join("ocfl-root")
    }

    /// The staging area (same filesystem as the root, so publishing is a rename).
    pub fn staging(&self) -> PathBuf {
        self.data.join("staging")
    }

    /// The redo journal (same filesystem as the root: its checkpoints sync both).
    pub fn journal_dir(&self) -> PathBuf {
        self.data.join("journal")
    }

    /// The SQLite catalog.
    pub fn catalog_path(&self) -> PathBuf {
        self.data.join("catalog.sqlite")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_then_env() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("arca.toml");
        std::fs::write(
            &f,
            "listen = \"0.0.0.0:9000\"\ndata = \"/srv/arca\"\nbase_path = \"/fcrepo/rest/\"\n",
        )
        .unwrap();
        let mut c: Config = toml::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        c.apply_env(|k| (k == "ARCA_DATA").then(|| "/other".to_string()));
        c.validate().unwrap();
        assert_eq!(c.listen, "0.0.0.0:9000");
        assert_eq!(c.data, PathBuf::from("/other"));
        assert_eq!(c.base_path, "/fcrepo/rest");
    }

    #[test]
    fn rejects_bad_values() {
        assert!(toml::from_str::<Config>("nope = 1").is_err());
        let mut c = Config {
            listen: "localhost".into(),
            ..Config::default()
        };
        assert!(c.validate().is_err());
        let mut c = Config {
            base_path: "rest".into(),
            ..Config::default()
        };
        assert!(c.validate().is_err());
    }
}
