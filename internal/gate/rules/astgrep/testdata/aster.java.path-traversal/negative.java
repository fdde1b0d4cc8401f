import java.io.*;
import java.nio.file.*;

class Downloads {
    static final Path BASE = Paths.get("/srv/files");

    byte[] get(String name) throws IOException {
        Path p = BASE.resolve(name).normalize();
        if (!p.startsWith(BASE)) {
            throw new IOException("outside");
        }
        return Files.readAllBytes(p);
    }

    InputStream config() throws IOException {
        return new FileInputStream(new File("/etc/app", "app.conf"));
    }
}
