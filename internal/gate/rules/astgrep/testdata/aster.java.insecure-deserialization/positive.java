import java.io.ObjectInputStream;
import java.net.Socket;
import javax.servlet.http.HttpServletRequest;
import com.fasterxml.jackson.databind.ObjectMapper;

class Receiver {
    Object read(HttpServletRequest request) throws Exception {
        // ruleid: aster.java.insecure-deserialization
        ObjectInputStream in = new ObjectInputStream(request.getInputStream());
        return in.readObject();
    }

    Object fromPeer(Socket socket) throws Exception {
        // ruleid: aster.java.insecure-deserialization
        return new java.beans.XMLDecoder(socket.getInputStream()).readObject();
    }

    ObjectMapper mapper() {
        ObjectMapper m = new ObjectMapper();
        // ruleid: aster.java.insecure-deserialization
        m.enableDefaultTyping();
        return m;
    }
}
