import java.sql.*;

class UserDao {
    static final String TABLE = "users";

    ResultSet find(Connection conn, String id) throws SQLException {
        PreparedStatement ps = conn.prepareStatement("SELECT * FROM users WHERE id = ?");
        ps.setString(1, id);
        return ps.executeQuery();
    }

    int count(Connection conn) throws SQLException {
        return conn.createStatement().executeUpdate("DELETE FROM " + TABLE + " WHERE expired = 1");
    }

    void log(Logger log, String name) {
        log.info("select from menu: " + name);
    }
}
