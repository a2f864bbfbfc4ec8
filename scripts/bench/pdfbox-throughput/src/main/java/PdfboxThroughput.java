import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.apache.pdfbox.Loader;
import org.apache.pdfbox.pdmodel.PDDocument;
import org.apache.pdfbox.text.PDFTextStripper;

/**
 * Apache PDFBox's text extraction over every PDF of a directory, in a loop: THREADS threads for
 * a warm-up (the JIT compiles) and then SECONDS measured, each thread taking the files in turn
 * from a different start (as arca's measure_throughput does). Prints documents/s and the text's
 * length per pass, to compare with what arca extracts.
 *
 * <p>Usage: {@code PdfboxThroughput DIR THREADS SECONDS [WARMUP_SECONDS]}
 */
public final class PdfboxThroughput {
  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    int threads = Integer.parseInt(args[1]);
    double seconds = Double.parseDouble(args[2]);
    double warmup = args.length > 3 ? Double.parseDouble(args[3]) : 10;
    List<byte[]> files = new ArrayList<>();
    try (Stream<Path> s = Files.list(dir)) {
      for (Path p : s.filter(p -> p.toString().endsWith(".pdf")).sorted().toList()) {
        files.add(Files.readAllBytes(p));
      }
    }
    long chars = 0;
    for (byte[] f : files) {
      chars += extract(f).length();
    }
    System.out.printf("%d PDFs, %d characters of text per pass%n", files.size(), chars);
    run(files, threads, warmup);
    long[] docsAndBytes = run(files, threads, seconds);
    System.out.printf(
        "pdfbox, %d thread(s): %d documents in %.1f s = %.1f docs/s, %.2f MB/s%n",
        threads,
        docsAndBytes[0],
        seconds,
        docsAndBytes[0] / seconds,
        docsAndBytes[1] / seconds / 1e6);
  }

  private static String extract(byte[] pdf) throws Exception {
    try (PDDocument doc = Loader.loadPDF(pdf)) {
      return new PDFTextStripper().getText(doc);
    }
  }

  private static long[] run(List<byte[]> files, int threads, double seconds)
      throws InterruptedException {
    AtomicLong docs = new AtomicLong();
    AtomicLong bytes = new AtomicLong();
    long end = System.nanoTime() + (long) (seconds * 1e9);
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      final int start = t;
      Thread w =
          new Thread(
              () -> {
                int i = start;
                while (System.nanoTime() < end) {
                  byte[] f = files.get(i % files.size());
                  try {
                    if (extract(f).isEmpty()) {
                      throw new IllegalStateException("no text");
                    }
                  } catch (Exception e) {
                    throw new RuntimeException(e);
                  }
                  docs.incrementAndGet();
                  bytes.addAndGet(f.length);
                  i++;
                }
              });
      w.start();
      workers.add(w);
    }
    for (Thread w : workers) {
      w.join();
    }
    return new long[] {docs.get(), bytes.get()};
  }
}
