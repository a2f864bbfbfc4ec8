//! Storage layout extension 0004 (hashed n-tuple) and the root files ocfl-java writes.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

/// Name of the layout extension Fedora 6 uses.
pub const EXTENSION_0004: &str = "0004-hashed-n-tuple-storage-layout";

/// `ocfl_layout.json` exactly as ocfl-java (Jackson pretty printer) writes it.
pub const OCFL_LAYOUT_JSON: &str = "{\n  \"extension\" : \"0004-hashed-n-tuple-storage-layout\",\n  \"description\" : \"OCFL object identifiers are hashed and encoded as lowercase hex strings. These digests are then divided into N n-tuple segments, which are used to create nested paths under the OCFL storage root.\"\n}";

/// `extensions/0004-hashed-n-tuple-storage-layout/config.json` exactly as ocfl-java writes it.
pub const LAYOUT_CONFIG_JSON: &str = "{\n  \"digestAlgorithm\" : \"sha256\",\n  \"tupleSize\" : 3,\n  \"numberOfTuples\" : 3,\n  \"shortObjectRoot\" : false,\n  \"extensionName\" : \"0004-hashed-n-tuple-storage-layout\"\n}";

/// Parameters of the hashed n-tuple layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashedNTuple {
    /// Characters per tuple.
    pub tuple_size: usize,
    /// Number of tuples.
    pub number_of_tuples: usize,
    /// Whether the object directory is only the remainder of the hex digest.
    pub short_object_root: bool,
}

impl Default for HashedNTuple {
    /// Fedora's configuration: sha256, 3 × 3, full object root.
    fn default() -> Self {
        Self {
            tuple_size: 3,
            number_of_tuples: 3,
            short_object_root: false,
        }
    }
}

impl HashedNTuple {
    /// Reads the parameters from an extension `config.json`, with the extension's defaults
    /// for missing keys. Only sha256 is supported as its digest algorithm.
    pub fn from_config(json: &serde_json::Value) -> Result<Self, String> {
        let alg = json
            .get("digestAlgorithm")
            .and_then(|v| v.as_str())
            .unwrap_or("sha256");
        if alg != "sha256" {
            return Err(format!(
                "layout 0004 with digestAlgorithm {alg} is not supported"
            ));
        }
        let get = |k: &str, d: u64| json.get(k).and_then(|v| v.as_u64()).unwrap_or(d) as usize;
        let layout = Self {
            tuple_size: get("tupleSize", 3),
            number_of_tuples: get("numberOfTuples", 3),
            short_object_root: json
                .get("shortObjectRoot")
                .and_then(|v| v.as_bool())
                .unwrap_or(false),
        };
        // A sha256 hex digest has 64 characters; the product must not overflow either.
        let used = layout.tuple_size.checked_mul(layout.number_of_tuples);
        if used.is_none_or(|n| n > 64) || (layout.tuple_size == 0) != (layout.number_of_tuples == 0)
        {
            return Err("layout 0004 tuple parameters are out of range".into());
        }
        Ok(layout)
    }

    /// The object's path relative to the storage root.
    pub fn object_path(&self, object_id: &str) -> PathBuf {
        PathBuf::from(self.object_key(object_id))
    }

    /// The object's root as a store key prefix (its path relative to the storage root,
    /// `/`-separated).
    pub fn object_key(&self, object_id: &str) -> String {
        let hex = hex::encode(Sha256::digest(object_id.as_bytes()));
        let mut key = String::with_capacity(hex.len() * 2);
        let mut used = 0;
        for i in 0..self.number_of_tuples {
            let start = i * self.tuple_size;
            key.push_str(&hex[start..start + self.tuple_size]);
            key.push('/');
            used = start + self.tuple_size;
        }
        if self.short_object_root {
            key.push_str(&hex[used..]);
        } else {
            key.push_str(&hex);
        }
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_fedora_paths() {
        let l = HashedNTuple::default();
        assert_eq!(
            l.object_path("info:fedora").to_str().unwrap(),
            "141/964/af8/141964af842132b7a706ed010474c410514b472acc0d7d8f805c23e748578b8b"
        );
        assert_eq!(
            l.object_path("info:fedora/c1").to_str().unwrap(),
            "b0c/f60/077/b0cf600778d5a97bbbc6cff6cf5a95763bdabbe246a9a85e3dd0d06bce587337"
        );
    }

    #[test]
    fn refuses_tuple_parameters_beyond_the_digest() {
        let config = |size: u64, n: u64| serde_json::json!({"digestAlgorithm": "sha256", "tupleSize": size, "numberOfTuples": n});
        assert!(HashedNTuple::from_config(&config(3, 3)).is_ok());
        assert!(HashedNTuple::from_config(&config(8, 8)).is_ok());
        assert!(HashedNTuple::from_config(&config(9, 8)).is_err());
        // 2^32 × 2^32 wraps to 0 in 64-bit arithmetic.
        assert!(HashedNTuple::from_config(&config(1 << 32, 1 << 32)).is_err());
        assert!(HashedNTuple::from_config(&config(u64::MAX, 2)).is_err());
    }

    #[test]
    fn root_files_match_the_fedora_sample() {
        let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/ocfl-fedora-sample/root");
        assert!(
            sample.exists(),
            "the shared Fedora sample root is missing: {sample:?}"
        );
        assert_eq!(
            std::fs::read_to_string(sample.join("ocfl_layout.json")).unwrap(),
            OCFL_LAYOUT_JSON
        );
        assert_eq!(
            std::fs::read_to_string(
                sample
                    .join("extensions")
                    .join(EXTENSION_0004)
                    .join("config.json")
            )
            .unwrap(),
            LAYOUT_CONFIG_JSON
        );
    }
}
