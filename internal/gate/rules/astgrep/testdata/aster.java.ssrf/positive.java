import java.net.*;
import javax.servlet.http.HttpServletRequest;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.client.RestTemplate;

class Fetch {
    Object proxy(HttpServletRequest request) throws Exception {
        // ruleid: aster.java.ssrf
        URL u = new URL(request.getParameter("url"));
        return u.openStream();
    }

    String preview(RestTemplate rest, @RequestParam String target) {
        // ruleid: aster.java.ssrf
        return rest.getForObject(target, String.class);
    }
}
