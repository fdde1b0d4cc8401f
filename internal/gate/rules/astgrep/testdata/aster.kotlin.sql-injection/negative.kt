import java.sql.Connection

class UserDao(private val conn: Connection) {
    fun find(id: String) =
        conn.prepareStatement("SELECT * FROM users WHERE id = ?").apply { setString(1, id) }.executeQuery()

    fun all() = conn.createStatement().executeQuery("SELECT * FROM users")

    fun log(name: String) = println("select from menu: $name")
}
