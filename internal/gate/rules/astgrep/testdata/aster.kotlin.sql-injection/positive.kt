import java.sql.Connection

class UserDao(private val conn: Connection) {
    fun find(id: String) =
        // ruleid: aster.kotlin.sql-injection
        conn.createStatement().executeQuery("SELECT * FROM users WHERE id = '$id'")

    fun delete(name: String) {
        // ruleid: aster.kotlin.sql-injection
        val sql = "DELETE FROM users WHERE name = '" + name + "'"
        conn.createStatement().executeUpdate(sql)
    }
}
