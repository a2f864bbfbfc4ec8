//! A stored FOXML document turned into a self-contained one (the archive-export form):
//! managed content referenced by `INTERNAL_ID` is put inline as base64, so that the
//! document alone can travel to a running arca (`arca import fedora3 --url`).

use std::path::PathBuf;

use base64::Engine;
use quick_xml::events::{BytesEnd, BytesStart, BytesText, Event};
use quick_xml::{Reader, Writer};

/// Rewrites every `<contentLocation TYPE="INTERNAL_ID" REF="…"/>` of `foxml` into a
/// `<binaryContent>` with the base64 of the file `resolve` finds for it; everything else is
/// copied as it is. Each managed file is held in memory once, as base64.
pub fn inline_managed_content(
    foxml: &[u8],
    resolve: &dyn Fn(&str) -> Option<PathBuf>,
) -> Result<Vec<u8>, String> {
    let mut reader = Reader::from_reader(foxml);
    let mut writer = Writer::new(Vec::with_capacity(foxml.len()));
    let mut buf = Vec::new();
    loop {
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|e| format!("malformed XML at byte {}: {e}", reader.buffer_position()))?;
        match event {
            Event::Eof => break,
            Event::Empty(e) if e.local_name().as_ref() == b"contentLocation" => {
                let attribute = |name: &[u8]| -> Option<String> {
                    e.attributes()
                        .flatten()
                        .find(|a| a.key.local_name().as_ref() == name)
                        .and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()))
                };
                if attribute(b"TYPE").as_deref() != Some("INTERNAL_ID") {
                    writer
                        .write_event(Event::Empty(e))
                        .map_err(|e| e.to_string())?;
                    continue;
                }
                let reference = attribute(b"REF").unwrap_or_default();
                let file = resolve(&reference)
                    .ok_or_else(|| format!("managed content {reference:?} is not in the store"))?;
                let bytes = std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?;
                let name = String::from_utf8_lossy(e.name().as_ref())
                    .replace("contentLocation", "binaryContent");
                writer
                    .write_event(Event::Start(BytesStart::new(name.as_str())))
                    .and_then(|_| {
                        writer.write_event(Event::Text(BytesText::from_escaped(
                            base64::engine::general_purpose::STANDARD.encode(&bytes),
                        )))
                    })
                    .and_then(|_| writer.write_event(Event::End(BytesEnd::new(name.as_str()))))
                    .map_err(|e| e.to_string())?;
            }
            other => writer.write_event(other).map_err(|e| e.to_string())?,
        }
        buf.clear();
    }
    Ok(writer.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_object_becomes_self_contained_and_reads_the_same() {
        let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fedora3");
        let sources = crate::source::scan(&[corpus.join("akubra")]).unwrap();
        let entry = sources
            .objects
            .iter()
            .find(|e| e.pid == "f3test:versioned")
            .unwrap();
        let stored = std::fs::read(&entry.foxml).unwrap();
        let resolve = |r: &str| entry.resolver.resolve(r).ok();
        let inline = inline_managed_content(&stored, &resolve).unwrap();
        let (a, b) = (
            crate::foxml::parse(&stored).unwrap(),
            crate::foxml::parse(&inline).unwrap(),
        );
        assert_eq!(a.properties, b.properties);
        assert_eq!(a.datastreams.len(), b.datastreams.len());
        for (x, y) in a.datastreams.iter().zip(&b.datastreams) {
            for (vx, vy) in x.versions.iter().zip(&y.versions) {
                match (&vx.content, &vy.content) {
                    (crate::Content::Internal(r), crate::Content::Inline(bytes)) => {
                        assert_eq!(&std::fs::read(resolve(r).unwrap()).unwrap(), bytes)
                    }
                    (p, q) => assert_eq!(p, q, "{}/{}", x.id, vx.id),
                }
            }
        }
        let missing = |_: &str| None;
        assert!(inline_managed_content(&stored, &missing)
            .unwrap_err()
            .contains("not in the store"));
    }
}
