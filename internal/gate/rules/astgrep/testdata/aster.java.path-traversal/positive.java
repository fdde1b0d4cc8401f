import java.io.*;
import java.nio.file.*;
import javax.servlet.http.HttpServletRequest;
import org.springframework.web.bind.annotation.PathVariable;

class Downloads {
    byte[] get(HttpServletRequest request) throws IOException {
        String name = request.getParameter("file");
        // ruleid: aster.java.path-traversal
        return Files.readAllBytes(Paths.get("/srv/files/" + name));
    }

    InputStream open(@PathVariable String name) throws IOException {
        // ruleid: aster.java.path-traversal
        return new FileInputStream(new File("/srv/files", name));
    }
}
