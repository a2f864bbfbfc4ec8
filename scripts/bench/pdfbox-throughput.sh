#!/usr/bin/env bash
# The reference for arca's PDF extraction speed (issue #12): Apache PDFBox 3 extracting the text
# of the corpus's PDFs on THREADS threads (default 2) for SECONDS (default 20), after a warm-up.
# Needs Java 17 and Maven (the first run fetches PDFBox from Maven Central).
# Usage: scripts/bench/pdfbox-throughput.sh [PDF_DIR] [THREADS] [SECONDS]
# Compare with: cargo test --release -p arca-search --test it -- --ignored --nocapture extract::measure_throughput
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
pdfs="${1:-$here/../../../shared/corpus/pdf}"
threads="${2:-2}"
seconds="${3:-20}"
cd "$here/pdfbox-throughput"
mvn -q -B compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt >&2
# PDFBox logs a warning per document for fonts it substitutes; that is not its speed.
exec java -Dorg.apache.commons.logging.Log=org.apache.commons.logging.impl.NoOpLog -cp "target/classes:$(cat target/classpath.txt)" PdfboxThroughput "$pdfs" "$threads" "$seconds"
