import java.io.ObjectInputStream
import java.net.Socket
import javax.servlet.http.HttpServletRequest

class Receiver {
    fun read(request: HttpServletRequest): Any? =
        // ruleid: aster.kotlin.insecure-deserialization
        ObjectInputStream(request.inputStream).readObject()

    fun fromPeer(socket: Socket): Any? {
        // ruleid: aster.kotlin.insecure-deserialization
        val input = ObjectInputStream(socket.getInputStream())
        return input.readObject()
    }
}
