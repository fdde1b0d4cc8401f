import java.net.*;
import org.springframework.web.client.RestTemplate;

class Fetch {
    Object status() throws Exception {
        return new URL("https://status.example.com/health").openStream();
    }

    String user(RestTemplate rest, String id) {
        return rest.getForObject("https://api.example.com/users/{id}", String.class, id);
    }
}
