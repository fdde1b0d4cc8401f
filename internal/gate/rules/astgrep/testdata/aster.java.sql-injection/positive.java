import java.sql.*;
import javax.servlet.http.HttpServletRequest;

class UserDao {
    ResultSet find(Connection conn, HttpServletRequest request) throws SQLException {
        String id = request.getParameter("id");
        Statement st = conn.createStatement();
        // ruleid: aster.java.sql-injection
        return st.executeQuery("SELECT * FROM users WHERE id = '" + id + "'");
    }

    void delete(Connection conn, String name) throws SQLException {
        // ruleid: aster.java.sql-injection
        String sql = String.format("DELETE FROM users WHERE name = '%s'", name);
        conn.createStatement().executeUpdate(sql);
    }

    Object byEmail(EntityManager em, String email) {
        // ruleid: aster.java.sql-injection
        return em.createQuery("select u from User u where u.email = '" + email + "'").getSingleResult();
    }
}
