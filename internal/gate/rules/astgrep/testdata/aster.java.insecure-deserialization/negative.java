import java.io.FileInputStream;
import java.io.ObjectInputStream;
import com.fasterxml.jackson.databind.ObjectMapper;

class Receiver {
    Object cache() throws Exception {
        try (ObjectInputStream in = new ObjectInputStream(new FileInputStream("cache.bin"))) {
            return in.readObject();
        }
    }

    User parse(ObjectMapper m, String body) throws Exception {
        return m.readValue(body, User.class);
    }
}
