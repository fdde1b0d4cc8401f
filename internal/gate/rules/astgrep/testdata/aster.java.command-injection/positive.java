import javax.servlet.http.HttpServletRequest;

class Tools {
    Process ping(HttpServletRequest request) throws Exception {
        String host = request.getParameter("host");
        // ruleid: aster.java.command-injection
        return Runtime.getRuntime().exec("ping -c 1 " + host);
    }

    Process archive(String name) throws Exception {
        // ruleid: aster.java.command-injection
        return new ProcessBuilder("sh", "-c", "tar czf " + name + ".tgz data").start();
    }
}
